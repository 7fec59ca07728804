package dev.coop.failure;

import java.time.Duration;

/**
 * A step ran past its timeout ({@code Saga.Builder#timeout}, {@code Saga.Builder#stepTimeout}): the attempt failed
 * with this exception, its writes were rolled back, and its connection refuses every further use; its thread was
 * interrupted and the engine went on without it. A retry policy sees it like any failure of the step (retry on it
 * with {@code RetryPolicy.retryOn(StepTimedOutException.class)}), and the run's failure names it.
 */
public final class StepTimedOutException extends CoopException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.StepTimedOutException";

    private final transient Duration timeout;

    public StepTimedOutException(String message, Duration timeout) {
        super(message);
        this.timeout = timeout;
    }

    /** The timeout the step ran past. */
    public Duration timeout() {
        return timeout;
    }
}
