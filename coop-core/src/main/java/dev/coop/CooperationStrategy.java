package dev.coop;

import dev.coop.failure.Failure;

import java.util.Optional;

/**
 * The five decisions of an engine's event loop, as typed Java: whether to
 * start a run, when a run waiting for its children resumes, on the happy path and on the rollback path, and when a
 * run gives up on either path. Every method has the standard behaviour as its default, so a strategy overrides only
 * what it changes. Set one per engine ({@link CoopEngine.Builder#strategy}) or per saga
 * ({@link Saga.Builder#strategy}); built-in ones are in {@link Strategies}.
 *
 * <p>
 * Strategies run inside the engine's transactions, holding the run's row lock: keep them fast and free of I/O.
 * Whatever they decide, Coop keeps its guarantees: a step never starts before every child it still awaits finished,
 * a compensation never before the rollbacks of its step's children, and a cancelled scope never commits a step.
 */
public interface CooperationStrategy {
    /**
     * 1. Whether a run that has not started yet starts now. {@link StartDecision#ignore} parks it with the reason,
     * for an operator to retry or leave; nothing is dropped. Default: start.
     */
    default StartDecision start(RunFacts run) {
        return StartDecision.START;
    }

    /**
     * 2. How long a run keeps waiting for the runs its latest step caused. Asked when the step committed with
     * children to wait for, and again at the time a {@link BarrierDecision#waitUntil} named, while some are still
     * running. Once every awaited child finished, the run resumes. Default: wait for all of them.
     */
    default BarrierDecision resumeHappyPath(Barrier barrier) {
        return BarrierDecision.WAIT;
    }

    /**
     * 3. Whether a run gives up its happy path before its next step (and when a step calls
     * {@link StepContext#giveUpIfRequested()}, and while the run waits for its children: when a cancellation wakes it,
     * at its deadline, and when a barrier timer fires): the reason becomes the cause of a
     * {@link dev.coop.failure.GaveUpException} and the run rolls back. A waiting run that gives up settles its children
     * that have not started without running them. Default: a cancellation of its scope, or its happy-path (or absolute)
     * deadline passed.
     */
    default Optional<Failure> giveUpOnHappyPath(RunFacts run) {
        return run.cancellation().or(() -> run.missedDeadline(false));
    }

    /**
     * 4. How long a rolling-back run keeps waiting for the rollbacks of its step's children; as
     * {@link #resumeHappyPath}. Children asked to roll back have all started, so only waiting applies. Default: wait.
     */
    default BarrierDecision resumeRollbackPath(Barrier barrier) {
        return BarrierDecision.WAIT;
    }

    /**
     * 5. Whether a rollback gives up before its next compensation: the run ends ROLLBACK_FAILED with the reason.
     * Default: its rollback-path (or absolute) deadline passed.
     */
    default Optional<Failure> giveUpOnRollbackPath(RunFacts run) {
        return run.missedDeadline(true);
    }
}
