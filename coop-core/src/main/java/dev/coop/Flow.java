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

    /**
     * Run the same step again, no earlier than {@code delay} after this iteration started (by the database's clock):
     * periodic execution inside a run (see {@link Saga.Builder#periodic}). The wait holds no thread and survives
     * restarts; a deadline brings it forward so that the run gives up in time. An iteration that launched messages
     * in its run's scope is followed by the next one when they all finished (the step barrier), without a further
     * wait.
     */
    static Flow repeatAfter(java.time.Duration delay) {
        return new RepeatAfter(delay);
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

    /** Run the same step again after {@code delay}. */
    record RepeatAfter(java.time.Duration delay) implements Flow {
        public RepeatAfter {
            dev.coop.internal.store.InputLimits.delay("The delay of Flow.repeatAfter", delay);
        }
    }

    /** Go on with the step named {@code step}. */
    record GoTo(String step) implements Flow {
        public GoTo {
            Objects.requireNonNull(step, "step of GoTo");
        }
    }
}
