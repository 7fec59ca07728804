package dev.coop;

import java.time.Instant;
import java.util.List;

/**
 * What pruning deleted, or would delete (a dry run counts hierarchies only: {@code runs}, {@code events} and
 * {@code messages} are then 0).
 *
 * @param cutoff hierarchies whose every root run finished before this instant (database time) were candidates
 * @param hierarchies the hierarchies deleted (or that would be)
 * @param sample up to 20 of their root message ids, oldest first
 */
public record PruneResult(boolean dryRun, Instant cutoff, long hierarchies, long runs, long events, long messages,
        List<MessageId> sample) {
}
