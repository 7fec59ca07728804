package dev.coop.internal.store;

import dev.coop.RunStatus;
import java.util.UUID;

/** A run caused by a step instance: its result, or its failure. */
public record ChildRun(UUID runId, UUID messageId, String saga, RunStatus status, String result,
        String failure) {
}
