package dev.coop.internal.store;

import dev.coop.failure.CoopValidationException;
import java.time.Duration;
import java.time.Instant;

/**
 * The limits Coop puts on user-supplied values, checked where they enter (a builder, a launch, a call) so that
 * nothing fails later inside a run: text PostgreSQL would refuse or alter, and times PostgreSQL cannot store.
 */
public final class InputLimits {
    /** The longest reason (cancellation, rollback) kept; every run of a hierarchy copies it into its failure. */
    public static final int MAX_REASON_LENGTH = 2_000;

    private InputLimits() {
    }

    /**
     * The index of the first unpaired UTF-16 surrogate in {@code s}, or -1. PostgreSQL stores UTF-8, which has no
     * encoding for a lone surrogate: the driver would silently replace it with '?'.
     */
    public static int loneSurrogateAt(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                    continue;
                }
                return i;
            }
            if (Character.isLowSurrogate(c)) {
                return i;
            }
        }
        return -1;
    }

    /** A reason recorded in the log (a cancellation's, an external task's failure): 1 to 2,000 storable characters. */
    public static String reason(String reason) {
        if (reason == null || reason.isBlank()) {
            throw new CoopValidationException("A reason is required; it is recorded in the event log");
        }
        if (reason.length() > MAX_REASON_LENGTH) {
            throw new CoopValidationException("A reason is at most " + MAX_REASON_LENGTH
                    + " characters; this one has " + reason.length());
        }
        if (reason.indexOf('\0') >= 0 || loneSurrogateAt(reason) >= 0) {
            throw new CoopValidationException("A reason cannot contain a NUL character or an unpaired UTF-16"
                    + " surrogate: PostgreSQL cannot store them");
        }
        return reason;
    }

    /** The lowest and highest priority of a launch (the claim lists each of them, see ClaimSql.EVERY_PRIORITY). */
    public static final int MIN_PRIORITY = -10;
    public static final int MAX_PRIORITY = 10;

    /** The longest idempotency or ordering key (characters). */
    public static final int MAX_KEY_LENGTH = 255;

    /**
     * A launch key (idempotency, ordering): 1 to {@value #MAX_KEY_LENGTH} characters, no control characters (NUL
     * cannot be stored; the others would garble logs and terminals), no lone surrogate. Keys are untrusted input;
     * they are only ever bind parameters.
     */
    public static String key(String what, String key) {
        if (key == null) {
            throw new CoopValidationException(what + " must not be null");
        }
        if (key.isEmpty() || key.isBlank()) {
            throw new CoopValidationException(what + " must not be empty or blank, was '" + key + "'");
        }
        for (int i = 0; i < key.length(); i++) {
            if (Character.isISOControl(key.charAt(i))) {
                throw new CoopValidationException(what + " must not contain control characters, found U+"
                        + String.format("%04X", (int) key.charAt(i)) + " at index " + i);
            }
        }
        if (key.length() > MAX_KEY_LENGTH) {
            throw new CoopValidationException(what + " must be at most " + MAX_KEY_LENGTH + " characters, was "
                    + key.length() + " characters starting '" + key.substring(0, 20) + "...'");
        }
        int surrogate = loneSurrogateAt(key);
        if (surrogate >= 0) {
            throw new CoopValidationException(what + " contains an unpaired surrogate at index " + surrogate);
        }
        return key;
    }

    /** The longest wait Coop takes: sleeps, retry delays (100 years). */
    public static final Duration MAX_DELAY = Duration.ofDays(36_525);
    /** The latest instant Coop stores (due times, launches); PostgreSQL itself goes further, java.time less far. */
    public static final Instant LATEST = Instant.parse("9999-12-31T23:59:59Z");
    /** The earliest instant Coop stores. */
    public static final Instant EARLIEST = Instant.parse("0001-01-01T00:00:00Z");

    /** {@code delay}, refused when negative or longer than {@link #MAX_DELAY}; {@code what} names it. */
    public static Duration delay(String what, Duration delay) {
        if (delay == null || delay.isNegative() || delay.compareTo(MAX_DELAY) > 0) {
            throw new CoopValidationException(what + " must be between zero and " + MAX_DELAY.toDays()
                    + " days, was " + delay);
        }
        return delay;
    }

    /** {@code at}, refused outside {@link #EARLIEST}..{@link #LATEST}; {@code what} names it. */
    public static Instant instant(String what, Instant at) {
        if (at == null || at.isBefore(EARLIEST) || at.isAfter(LATEST)) {
            throw new CoopValidationException(what + " must be between " + EARLIEST + " and " + LATEST + ", was "
                    + at);
        }
        return at;
    }

    /** A timeout in nanoseconds, saturated: a negative one is zero, a huge one (e.g. 10,000 years) is "forever". */
    public static long timeoutNanos(Duration timeout) {
        if (timeout.isNegative()) {
            return 0;
        }
        return timeout.compareTo(Duration.ofNanos(Long.MAX_VALUE / 4)) > 0 ? Long.MAX_VALUE / 4 : timeout.toNanos();
    }
}
