package dev.coop;

import dev.coop.failure.CooperationException;

/**
 * Decides what a step does when runs it caused failed: like a catch block around all of them. Returning normally
 * means handled: the run goes on as if they had committed (messages launched here are awaited first, e.g. a retry).
 * Throwing (the default is to rethrow {@code failure}) rolls the run back. The run then goes where the step decided;
 * a handler that decides that itself (continue, repeat the step, go to another) is a {@link ChildFailureFlow}.
 */
@FunctionalInterface
public interface ChildFailureHandler<P> {
    /**
     * @param step the step whose children failed; {@code launch} works as in the step
     * @param failure a {@link dev.coop.failure.ChildRolledBackException} or
     *         {@link dev.coop.failure.ChildRollbackFailedException} whose causes are every child failure of that step
     */
    void handle(StepContext<P> step, CooperationException failure) throws Exception;
}
