package dev.coop.internal.step;

import dev.coop.StepContext;
import org.slf4j.MDC;

/**
 * The MDC keys set while user code runs, so that its own log lines name the run and step: {@code coop.saga},
 * {@code coop.step}, {@code coop.runId} and {@code coop.messageId}. Removed when the code returns.
 */
final class StepLogContext {
    static final String SAGA = "coop.saga";
    static final String STEP = "coop.step";
    static final String RUN_ID = "coop.runId";
    static final String MESSAGE_ID = "coop.messageId";

    private StepLogContext() {
    }

    static void enter(StepContext<?> step) {
        MDC.put(SAGA, step.saga());
        MDC.put(STEP, step.step());
        MDC.put(RUN_ID, step.runId().toString());
        MDC.put(MESSAGE_ID, step.messageId().value().toString());
    }

    static void leave() {
        MDC.remove(SAGA);
        MDC.remove(STEP);
        MDC.remove(RUN_ID);
        MDC.remove(MESSAGE_ID);
    }
}
