package dev.coop.inspect;

import java.time.Instant;

/**
 * How many external tasks of one name are open, and since when the oldest waits
 * ({@link dev.coop.CoopClient#openTaskCounts()}).
 */
public record OpenTaskCount(String name, long open, Instant oldest) {
}
