package dev.coop;

import dev.coop.failure.CooperationException;

/**
 * Undoes what a step did, when the run rolls back. Runs in its own transaction ({@code step.connection()}), after
 * every run the step caused has rolled back. Throwing ends the run ROLLBACK_FAILED.
 */
@FunctionalInterface
public interface Compensation<P> {
    /**
     * @param step the step being compensated (payload, connection, lineage); it cannot launch messages
     * @param cause the failure that made the run roll back
     */
    void compensate(StepContext<P> step, CooperationException cause) throws Exception;
}
