package dev.coop.inspect;

import dev.coop.RunStatus;

import java.util.Map;
import java.util.Objects;

/**
 * Runs of one saga that a bounded read counted instead of listing: the children of a run that caused more runs than a
 * tree lists one by one (a fan-out).
 *
 * @param saga the saga the runs belong to
 * @param total how many runs of that saga the parent caused (listed or not)
 * @param byStatus how many of them are in each status (statuses with no run are absent)
 */
public record CollapsedRuns(String saga, long total, Map<RunStatus, Long> byStatus) {
    public CollapsedRuns {
        Objects.requireNonNull(saga, "saga");
        byStatus = Map.copyOf(byStatus);
    }

    /** How many of them are in {@code status}. */
    public long count(RunStatus status) {
        return byStatus.getOrDefault(status, 0L);
    }

    /** Whether every one of them finished. */
    public boolean finished() {
        return byStatus.keySet().stream().allMatch(RunStatus::isFinished);
    }
}
