package dev.coop.internal.store;

import java.util.List;
import java.util.Map;

/**
 * What an emit wrote: the runs created per saga, and the emissions (indexes into the list) whose idempotency key
 * another message of the topic already held, which were not written.
 */
public record Emitted(Map<String, Integer> created, List<Integer> duplicates) {
}
