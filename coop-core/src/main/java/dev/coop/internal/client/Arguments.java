package dev.coop.internal.client;

import dev.coop.failure.CoopValidationException;
import dev.coop.internal.store.InputLimits;
import java.time.Duration;

/** The checks of a client's arguments that several of its actions share: reasons, actors, ages. */
public final class Arguments {
    private Arguments() {
    }

    /** A reason for an operator action, recorded in the event log: required, bounded, storable. */
    public static String reason(String reason) {
        if (reason == null || reason.isBlank()) {
            throw new CoopValidationException("A reason is required; it is recorded in the event log");
        }
        if (reason.length() > InputLimits.MAX_REASON_LENGTH) {
            throw new CoopValidationException("A reason is at most " + InputLimits.MAX_REASON_LENGTH
                    + " characters (every run of the hierarchy records it); this one has " + reason.length());
        }
        if (reason.indexOf('\0') >= 0 || InputLimits.loneSurrogateAt(reason) >= 0) {
            throw new CoopValidationException("A reason cannot contain a NUL character or an unpaired UTF-16"
                    + " surrogate: PostgreSQL cannot store them");
        }
        return reason;
    }

    /** A text of an audit entry ({@code what}: "actor", "action"): 1 to {@code max} storable characters. */
    public static String auditText(String what, String value, int max) {
        if (value == null || value.isBlank() || value.length() > max || value.indexOf('\0') >= 0
                || InputLimits.loneSurrogateAt(value) >= 0) {
            throw new CoopValidationException("An audit entry's " + what + " must be 1 to " + max
                    + " characters without NUL or unpaired surrogates, was "
                    + (value == null ? "null" : "'" + value + "'"));
        }
        return value;
    }

    /** Who took an operator action: 1 to 200 characters. */
    public static String actor(String actor) {
        return auditText("actor", actor, 200);
    }

    /** The age of what retention deletes: zero to 1,000 years. */
    public static void checkAge(Duration olderThan) {
        if (olderThan == null || olderThan.isNegative()) {
            throw new CoopValidationException("olderThan must be zero or positive, was " + olderThan);
        }
        if (olderThan.compareTo(Duration.ofDays(365L * 1000)) > 0) {
            throw new CoopValidationException("olderThan must be at most 1000 years, was " + olderThan);
        }
    }
}
