package dev.coop.internal;

import dev.coop.RunStatus;

/**
 * The state a run moves to at the end of a transaction. Built from the claimed state with the {@code with...}
 * methods, so that each transition names only what it changes.
 *
 * @param nextStep the name of the step at {@code stepIndex}, or null after the last
 * @param finalStep once the last step ran: the step name its COMMITTED will carry (null keeps what the run has)
 * @param historyAppend an instance to append to the run's history (step index, or -1-index for a handler run)
 * @param delayMillis how long from now until the run may be claimed again
 * @param checkCancellation whether the update must fail (SQLSTATE CP001) when the run's scope was cancelled
 */
record Advance(
        RunStatus status,
        boolean rollback,
        int stepIndex,
        String nextStep,
        String finalStep,
        int stepsDone,
        Integer historyAppend,
        int attempt,
        int pendingChildren,
        Integer rollbackSeq,
        String rollbackStage,
        String rollbackCause,
        long delayMillis,
        String failure,
        boolean checkCancellation) {

    /** The run as claimed, unchanged apart from counters that every transaction resets. */
    static Advance from(ClaimedRun run) {
        return new Advance(RunStatus.RUNNABLE, run.rollback(), run.stepIndex(), run.nextStep(), null, run.stepsDone(),
                null,
                run.attempt(), 0, run.rollbackSeq(), run.rollbackStage(), run.rollbackCause(), 0, null, false);
    }

    Advance status(RunStatus s) {
        return new Advance(s, rollback, stepIndex, nextStep, finalStep, stepsDone, historyAppend, attempt,
                pendingChildren,
                rollbackSeq, rollbackStage, rollbackCause, delayMillis, failure, checkCancellation);
    }

    /** A completed step or handler instance: appended to the history, counted, children to wait for. */
    Advance executed(int instance, int nextStepIndex, String nextStepName, String finalStepName, int children) {
        return new Advance(status, rollback, nextStepIndex, nextStepName, finalStepName, stepsDone + 1, instance, 1,
                children,
                rollbackSeq, rollbackStage, rollbackCause, delayMillis, failure, true);
    }

    Advance attempt(int a, long delay, String lastFailure) {
        return new Advance(status, rollback, stepIndex, nextStep, finalStep, stepsDone, historyAppend, a,
                pendingChildren,
                rollbackSeq, rollbackStage, rollbackCause, delay, lastFailure, checkCancellation);
    }

    Advance failure(String f) {
        return new Advance(status, rollback, stepIndex, nextStep, finalStep, stepsDone, historyAppend, attempt,
                pendingChildren,
                rollbackSeq, rollbackStage, rollbackCause, delayMillis, f, checkCancellation);
    }

    /** Fail the update (SQLSTATE CP001) if the run's scope was cancelled meanwhile. */
    Advance checkingCancellation() {
        return new Advance(status, rollback, stepIndex, nextStep, finalStep, stepsDone, historyAppend, attempt,
                pendingChildren,
                rollbackSeq, rollbackStage, rollbackCause, delayMillis, failure, true);
    }

    /** On the rollback path, at instance {@code seq}, stage {@code stage}, waiting for {@code children}. */
    Advance rollingBack(int seq, String stage, String cause, int children) {
        return new Advance(status, true, stepIndex, nextStep, finalStep, stepsDone, historyAppend, attempt, children,
                seq, stage,
                cause, delayMillis, failure, false);
    }
}
