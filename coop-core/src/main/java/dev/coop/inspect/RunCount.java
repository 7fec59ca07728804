package dev.coop.inspect;

import java.time.Instant;

/**
 * How many runs of one saga were launched and reached each outcome in one minute of the database's clock
 * ({@code CoopClient.counts}). Minutes without any are absent. A run counts once at its launch and once at each of
 * its final outcomes (a hierarchy undone later counts as committed, then as rolled back) and each time it is parked.
 *
 * @param minute the minute's start (UTC)
 */
public record RunCount(String saga, Instant minute, long launched, long committed, long rolledBack,
        long rollbackFailed, long parked) {
}
