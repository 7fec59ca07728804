package dev.coop;

/** The code of a step. It runs inside the step's transaction; throwing fails the step. */
@FunctionalInterface
public interface StepBody<P> {
    void run(StepContext<P> step) throws Exception;
}
