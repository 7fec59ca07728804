package dev.coop;

import java.util.Objects;

/** Whether a run starts: {@link #START}, or {@link #ignore(String)} to park it with a reason. */
public sealed interface StartDecision {
    /** Start the run now. */
    StartDecision START = new Start();

    /** Do not start the run: park it with {@code reason}, for an operator to retry or leave. */
    static StartDecision ignore(String reason) {
        return new Ignore(reason);
    }

    record Start() implements StartDecision {
    }

    record Ignore(String reason) implements StartDecision {
        public Ignore {
            Objects.requireNonNull(reason, "reason");
        }
    }
}
