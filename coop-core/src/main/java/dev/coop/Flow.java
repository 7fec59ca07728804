package dev.coop;

import java.util.Objects;

/**
 * What a run does after a step returned it (see {@link Saga.Builder#flowStep}): the next step, the same step again,
 * or a named step. The step barrier applies either way: the chosen step starts only after every run the step caused
 * finished.
 */
public sealed interface Flow {
    /** Go on with the next step (or commit after the last). */
    Flow CONTINUE = new Continue();

    /** Go on with the next step (or commit after the last). */
    static Flow next() {
        return CONTINUE;
    }

    /** Run the same step again (its {@link StepContext#iteration()} goes up by one). */
    static Flow repeat() {
        return Repeat.INSTANCE;
    }

    /** Go on with the step named {@code step}, forward or back; steps jumped over are not executed. */
    static Flow goTo(String step) {
        return new GoTo(step);
    }

    /** Go on with the next step. */
    record Continue() implements Flow {
    }

    /** Run the same step again. */
    record Repeat() implements Flow {
        static final Repeat INSTANCE = new Repeat();
    }

    /** Go on with the step named {@code step}. */
    record GoTo(String step) implements Flow {
        public GoTo {
            Objects.requireNonNull(step, "step of GoTo");
        }
    }
}
