package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.internal.store.InputLimits;
import java.util.Objects;
import java.util.Optional;

/**
 * How a step opens an external task ({@link StepContext#openTask(String, Object, TaskOptions)}), beyond its name and
 * payload: one immutable value; start from {@link #none()}, each option is checked as it is set and may be set once.
 *
 * <pre>{@code
 * TaskOptions.none().key("payment/4711").compensation(refunds, new Refund("4711"))
 * }</pre>
 */
public final class TaskOptions {
    /** The longest correlation key, in characters. */
    public static final int MAX_KEY_LENGTH = InputLimits.MAX_KEY_LENGTH;
    /** Correlation keys may not start with this: it is how tokens start. */
    public static final String TOKEN_PREFIX = "ct_";

    private static final TaskOptions NONE = new TaskOptions(null, null, null, null);

    private final String key;
    private final Topic<?> compensationTopic;
    private final Object compensationPayload;
    private final java.time.Duration timeout;

    private TaskOptions(String key, Topic<?> compensationTopic, Object compensationPayload,
            java.time.Duration timeout) {
        this.timeout = timeout;
        this.key = key;
        this.compensationTopic = compensationTopic;
        this.compensationPayload = compensationPayload;
    }

    /** No option set. */
    public static TaskOptions none() {
        return NONE;
    }

    /**
     * These options with a correlation key ({@code payment/4711}): 1 to {@value #MAX_KEY_LENGTH} characters, no
     * control characters, not starting with {@value #TOKEN_PREFIX}. Unique among open tasks: a step opening a task
     * with a key an open task holds fails when it commits.
     */
    public TaskOptions key(String key) {
        if (this.key != null) {
            throw new CoopValidationException("key was already set to '" + this.key + "'");
        }
        InputLimits.key("An external task's key", key);
        if (key.startsWith(TOKEN_PREFIX)) {
            throw new CoopValidationException("An external task's key must not start with '" + TOKEN_PREFIX
                    + "' (tokens do), was '" + key + "'");
        }
        return new TaskOptions(key, compensationTopic, compensationPayload, timeout);
    }

    /**
     * These options with a compensation: when the step's scope rolls back after the task completed, {@code payload}
     * is launched on {@code topic} in the run's scope (a {@code refund-requested}, say), and the rollback waits for
     * its runs like for any child.
     */
    public <T> TaskOptions compensation(Topic<T> topic, T payload) {
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(payload, "payload");
        if (compensationTopic != null) {
            throw new CoopValidationException("compensation was already set to topic '" + compensationTopic.name()
                    + "'");
        }
        return new TaskOptions(key, topic, payload, timeout);
    }

    /**
     * These options with a timeout of the task's own, from the start of the step that opens it: a task nobody settled
     * by then is settled {@link TaskState#TIMED_OUT} by Coop, a child failure of the step (its child-failure handler
     * may open it again, or go on without it; otherwise the run rolls back). The run's own deadlines apply as well.
     */
    public TaskOptions timeout(java.time.Duration timeout) {
        if (this.timeout != null) {
            throw new CoopValidationException("timeout was already set to " + this.timeout);
        }
        InputLimits.delay("An external task's timeout", Objects.requireNonNull(timeout, "timeout"));
        if (timeout.isZero()) {
            throw new CoopValidationException("An external task's timeout must be positive, was " + timeout);
        }
        return new TaskOptions(key, compensationTopic, compensationPayload, timeout);
    }

    /** The task's own timeout, if one was set. */
    public Optional<java.time.Duration> timeout() {
        return Optional.ofNullable(timeout);
    }

    public Optional<String> key() {
        return Optional.ofNullable(key);
    }

    /** The compensation's topic, if one was set. */
    public Optional<Topic<?>> compensationTopic() {
        return Optional.ofNullable(compensationTopic);
    }

    /** The compensation's payload, if one was set. */
    public Optional<Object> compensationPayload() {
        return Optional.ofNullable(compensationPayload);
    }
}
