package dev.coop;

/** The code of a step that decides where the run goes next. Throwing fails the step; returning null continues. */
@FunctionalInterface
public interface FlowBody<P> {
    Flow run(StepContext<P> step) throws Exception;
}
