package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;

import dev.coop.RunStatus;

/**
 * How a run's transaction ended, as each stage of the step path returns it to the one before, up to the worker:
 * whether the run may continue at once on this connection, and what the commit's reclaim got. A commit that leaves
 * its run runnable at once may begin the next transaction in the same round trip and lock the run again
 * ({@code reclaimTried}); {@code reclaimed} is then the run locked (null: runnable no more, or taken by another
 * worker), and the worker must go on with it, or let it go.
 *
 * @param status the run's status the transaction wrote, or null when it wrote none (retried later, moved elsewhere)
 * @param continueNow whether the worker may execute the run's next transaction at once
 */
record StepEnd(RunStatus status, boolean continueNow, boolean reclaimTried, ClaimedRun reclaimed) {
    /** The run does not continue here, and no reclaim began a transaction. */
    static final StepEnd STOP = new StepEnd(null, false, false, null);

    /** A commit that wrote {@code status}, with no reclaim: the run continues at once when it is runnable now. */
    static StepEnd committed(RunStatus status) {
        return new StepEnd(status, status == RunStatus.RUNNABLE, false, null);
    }

    /** A commit that wrote {@code status} and began the next transaction, reclaiming the run ({@code run}, or null). */
    static StepEnd reclaimed(RunStatus status, ClaimedRun run) {
        return new StepEnd(status, status == RunStatus.RUNNABLE, true, run);
    }

    /**
     * The same end, but the run does not continue at once (it is due later, or the stage decided so): a reclaim the
     * commit made is kept, for the worker to let go.
     */
    StepEnd stop() {
        return continueNow ? new StepEnd(status, false, reclaimTried, reclaimed) : this;
    }
}
