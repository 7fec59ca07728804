package dev.coop.join;

import dev.coop.Topic;

import dev.coop.failure.CoopValidationException;

import java.time.Duration;

/**
 * What a join waits for and what it announces. Immutable; each method returns a changed copy, validated as it is set.
 *
 * <pre>{@code
 * JoinSpec.expecting(3).key("customer-42").metadata(new Extract("2024-06")).onComplete(EXTRACTED).onFail(EXTRACT_FAILED)
 *         .failIfAnyFailed().timeout(Duration.ofMinutes(30))
 * }</pre>
 *
 * Both topics are required (they may be the same topic: the {@link JoinResult} says how the join ended).
 */
public final class JoinSpec {
    /** The largest expected count: the published {@link JoinResult} lists every member. */
    public static final int MAX_EXPECTED = 10_000;
    /** The longest grouping key, in characters. */
    public static final int MAX_KEY_LENGTH = 255;
    /** The longest timeout. */
    public static final Duration MAX_TIMEOUT = Duration.ofDays(3650);

    private final int expected;
    private final String key;
    private final Object metadata;
    private final Topic<JoinResult> onComplete;
    private final Topic<JoinResult> onFail;
    private final boolean failIfAnyFailed;
    private final Duration timeout;

    private JoinSpec(int expected, String key, Object metadata, Topic<JoinResult> onComplete,
            Topic<JoinResult> onFail, boolean failIfAnyFailed, Duration timeout) {
        this.expected = expected;
        this.key = key;
        this.metadata = metadata;
        this.onComplete = onComplete;
        this.onFail = onFail;
        this.failIfAnyFailed = failIfAnyFailed;
        this.timeout = timeout;
    }

    /**
     * A join that finishes once {@code count} members finished (1 to {@value #MAX_EXPECTED}). Attaching more members
     * than that is refused.
     */
    public static JoinSpec expecting(int count) {
        if (count < 1 || count > MAX_EXPECTED) {
            throw new CoopValidationException(
                    "A join's expected count must be between 1 and " + MAX_EXPECTED + ", was " + count);
        }
        return new JoinSpec(count, null, null, null, null, false, null);
    }

    /** An optional grouping key (1 to 255 characters), e.g. a customer or tenant id; joins can be listed by it. */
    public JoinSpec key(String key) {
        if (key != null && (key.isEmpty() || key.length() > MAX_KEY_LENGTH || key.indexOf('\0') >= 0)) {
            throw new CoopValidationException("A join's key must be 1 to " + MAX_KEY_LENGTH
                    + " characters without NUL (or null for none), was "
                    + (key.length() > 40 ? key.length() + " characters" : "'" + key + "'"));
        }
        return new JoinSpec(expected, key, metadata, onComplete, onFail, failIfAnyFailed, timeout);
    }

    /**
     * Optional metadata, serialized to JSON when the join starts (at most 64 KiB), kept with the join and repeated in
     * the message it publishes.
     */
    public JoinSpec metadata(Object metadata) {
        return new JoinSpec(expected, key, metadata, onComplete, onFail, failIfAnyFailed, timeout);
    }

    /** The topic of the message published when the join completes. Required. */
    public JoinSpec onComplete(Topic<JoinResult> topic) {
        return new JoinSpec(expected, key, metadata, requireTopic(topic, "on-complete"), onFail, failIfAnyFailed,
                timeout);
    }

    /** The topic of the message published when the join fails or times out. Required. */
    public JoinSpec onFail(Topic<JoinResult> topic) {
        return new JoinSpec(expected, key, metadata, onComplete, requireTopic(topic, "on-fail"), failIfAnyFailed,
                timeout);
    }

    /**
     * Makes the join end {@link JoinStatus#FAILED} (publishing on-fail) when, once every expected member finished, any
     * of them failed. Without it the join completes and the {@link JoinResult} counts the failures.
     */
    public JoinSpec failIfAnyFailed() {
        return new JoinSpec(expected, key, metadata, onComplete, onFail, true, timeout);
    }

    /**
     * Ends the join {@link JoinStatus#TIMED_OUT} (publishing on-fail) if it is still open this long after it started,
     * as measured by the engine's time (the database's clock unless a time source is given). Positive, at most 3650 days; default: no timeout. Timeouts are fired by
     * running engines (any engine on the schema).
     */
    public JoinSpec timeout(Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero() || timeout.compareTo(MAX_TIMEOUT) > 0
                || timeout.toMillis() == 0) {
            throw new CoopValidationException(
                    "A join's timeout must be at least 1 ms and at most 3650 days, was " + timeout);
        }
        return new JoinSpec(expected, key, metadata, onComplete, onFail, failIfAnyFailed, timeout);
    }

    private static Topic<JoinResult> requireTopic(Topic<JoinResult> topic, String which) {
        if (topic == null) {
            throw new CoopValidationException("A join's " + which + " topic is missing (null)");
        }
        return topic;
    }

    /** Refuses a spec that cannot start (both topics are required) with a {@link CoopValidationException}. */
    public void checkComplete() {
        if (onComplete == null) {
            throw new CoopValidationException("A join needs an on-complete topic: JoinSpec.onComplete(topic)");
        }
        if (onFail == null) {
            throw new CoopValidationException("A join needs an on-fail topic: JoinSpec.onFail(topic)");
        }
    }

    public int expected() {
        return expected;
    }

    public String key() {
        return key;
    }

    public Object metadata() {
        return metadata;
    }

    public Topic<JoinResult> onComplete() {
        return onComplete;
    }

    public Topic<JoinResult> onFail() {
        return onFail;
    }

    public boolean isFailIfAnyFailed() {
        return failIfAnyFailed;
    }

    /** The timeout, or null for none. */
    public Duration timeout() {
        return timeout;
    }

    @Override
    public String toString() {
        return "JoinSpec[expected=" + expected + ", key=" + key + ", onComplete="
                + (onComplete == null ? null : onComplete.name()) + ", onFail="
                + (onFail == null ? null : onFail.name()) + ", failIfAnyFailed=" + failIfAnyFailed + ", timeout="
                + timeout + "]";
    }
}
