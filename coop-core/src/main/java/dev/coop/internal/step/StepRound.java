package dev.coop.internal.step;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * One transaction that advances several runs of a saga by one step each: what waits for its commit (wake-ups and
 * completions that would otherwise follow each run's own commit), and its time budget. Steps run one after another;
 * once the budget is spent no further step starts, and the runs claimed but not started are released unexecuted
 * when the round commits, so that a slow step delays few others' commits.
 */
final class StepRound {
    /** How long a round keeps starting steps; the first step always runs. */
    static final long BUDGET_NANOS = 20_000_000L;

    private final LongSupplier nanos;
    private final long start;
    private final List<Runnable> afterCommit = new ArrayList<>();

    /** @param nanos the clock the budget is measured with (the engine's time source when it has one) */
    StepRound(LongSupplier nanos) {
        this.nanos = nanos;
        this.start = nanos.getAsLong();
    }

    void afterCommit(Runnable action) {
        afterCommit.add(action);
    }

    /** Whether the round's time is up: no further step starts in it. */
    boolean budgetSpent() {
        return nanos.getAsLong() - start >= BUDGET_NANOS;
    }

    /** Runs what waited for the commit. */
    void committed() {
        afterCommit.forEach(Runnable::run);
        afterCommit.clear();
    }
}
