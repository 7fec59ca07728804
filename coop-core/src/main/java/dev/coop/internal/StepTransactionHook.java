package dev.coop.internal;

import dev.coop.StepContext;

/**
 * How the code of a step (its body, a compensation, a child-failure handler, a finally part) takes part in an
 * application framework's transaction: the Spring starter begins a Spring transaction on the step's connection. An
 * engine listener that also implements this interface is called around that code, inside the listeners' calls. Not
 * part of Coop's API: the interface may change with the engine.
 */
public interface StepTransactionHook {
    /**
     * The code is about to run on {@code step.connection()}, in the step's transaction.
     *
     * @return what {@link #end} needs; throwing fails the step as if the code had thrown
     */
    Object begin(StepContext<?> step) throws Exception;

    /**
     * The code returned ({@code failure} null) or threw. After a return, makes the code's work final on the step's
     * connection before Coop writes the step's log rows (flushes what the framework holds, say); throwing then fails
     * the step, and Coop undoes its writes. After a failure, forgets the code's work: Coop undoes its writes.
     */
    void end(Object state, Throwable failure) throws Exception;
}
