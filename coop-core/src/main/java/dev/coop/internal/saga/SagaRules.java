package dev.coop.internal.saga;

import dev.coop.failure.CoopValidationException;
import dev.coop.internal.store.InputLimits;
import dev.coop.internal.store.LogNames;
import java.time.Duration;
import java.util.regex.Pattern;

/**
 * What the definition of one saga may be, checked as its builder is called (each message names the saga, the step
 * and the bad value): its name, its steps' names, and each option's range and whether it was set already. Imports
 * nothing of the API but the exception it throws; the saga's types stay with the builder, which asks these checks
 * in the order its methods document.
 */
public final class SagaRules {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}");
    private static final int MAX_STEP_NAME = 200;

    private final String saga;

    private SagaRules(String saga) {
        this.saga = saga;
    }

    /** The checks of the saga named {@code saga}, refused unless it is 1 to 200 letters, digits or . _ - : /. */
    public static SagaRules of(String saga) {
        if (saga == null) {
            throw new CoopValidationException("Saga name is missing (null)");
        }
        if (!NAME.matcher(saga).matches()) {
            throw new CoopValidationException("Invalid saga name '" + saga
                    + "': use 1 to 200 letters, digits or . _ - : / and start with a letter or digit");
        }
        return new SagaRules(saga);
    }

    /**
     * A step's name: printable, at most 200 characters and, unless it names a finally part Coop adds itself
     * ({@code coopsOwn}), not one of the names Coop logs (see {@link LogNames}). Uniqueness is the builder's.
     */
    public void stepName(String stepName, boolean coopsOwn) {
        if (stepName == null || stepName.isBlank() || stepName.length() > MAX_STEP_NAME
                || stepName.chars().anyMatch(Character::isISOControl) || InputLimits.loneSurrogateAt(stepName) >= 0) {
            throw new CoopValidationException("Invalid step name '" + stepName + "' in saga '" + saga
                    + "': use 1 to " + MAX_STEP_NAME + " printable characters (no control characters, no unpaired"
                    + " UTF-16 surrogates)");
        }
        if (!coopsOwn && (stepName.startsWith(LogNames.ROLLBACK_PREFIX) || stepName.endsWith(LogNames.HANDLER_SUFFIX)
                || stepName.endsWith(LogNames.CHILDREN_SUFFIX) || stepName.endsWith(LogNames.FINALLY_SUFFIX))) {
            throw new CoopValidationException("Step name '" + stepName + "' in saga '" + saga
                    + "' imitates the names Coop logs for rollbacks, child-failure handlers and finally parts;"
                    + " choose another");
        }
    }

    /** Refuses a second step named {@code stepName} ({@code added}: whether the name was new). */
    public void uniqueStep(String stepName, boolean added) {
        if (!added) {
            throw new CoopValidationException("Saga '" + saga + "' already has a step named '" + stepName + "'");
        }
    }

    /** The period of a periodic step and how many times it runs (at least once). */
    public void periodic(String stepName, Duration period, int times) {
        InputLimits.delay("The period of step '" + stepName + "' of saga '" + saga + "'", period);
        if (times < 1) {
            throw new CoopValidationException("Periodic step '" + stepName + "' of saga '" + saga
                    + "' must run at least once, was " + times + " times");
        }
    }

    /** The wait of a sleep step. */
    public void sleep(String stepName, Duration duration) {
        InputLimits.delay("The duration of sleep step '" + stepName + "' of saga '" + saga + "'", duration);
    }

    /** An option of a step that is set once ({@code what}: "a compensation", say), refused when it has one. */
    public void stepOption(String stepName, Object present, String what) {
        if (present != null) {
            throw new CoopValidationException("Step '" + stepName + "' of saga '" + saga + "' already has " + what);
        }
    }

    /**
     * Refuses a finally part for a step that cannot take one: a sleep, a finally part, or a step that has one
     * ({@code hasOne}, which the message says).
     */
    public void finallyPart(String stepName, boolean possible, boolean hasOne) {
        if (!possible) {
            throw new CoopValidationException("Step '" + stepName + "' of saga '" + saga
                    + "' cannot take a finally part" + (hasOne ? ": it already has one" : ""));
        }
    }

    /** A method that applies to the step added last, called before any step was added. */
    public CoopValidationException noStepYet(String method) {
        return new CoopValidationException(method + "() applies to the step added last, but saga '" + saga
                + "' has no step yet");
    }

    /** A step's own timeout: not of a sleep step, set once, from 1 ms to 365 days (in whole milliseconds). */
    public Duration stepTimeout(String stepName, boolean sleep, Duration present, Duration timeout) {
        String option = "timeout of step '" + stepName + "' of saga '" + saga + "'";
        if (sleep) {
            throw new CoopValidationException(option + ": a sleep step runs no code to time out");
        }
        notSet(option, present != null, present);
        return timeout(option, timeout);
    }

    /** The saga's default step timeout, set once, from 1 ms to 365 days (in whole milliseconds). */
    public Duration defaultTimeout(Duration present, Duration timeout) {
        String option = "stepTimeout of saga '" + saga + "'";
        notSet(option, present != null, present);
        return timeout(option, timeout);
    }

    /** {@code option} of the saga (its name, as the builder's method), between {@code min} and {@code max}. */
    public int between(String option, int value, int min, int max) {
        if (value < min || value > max) {
            throw new CoopValidationException(option + " of saga '" + saga + "' must be between " + min + " and "
                    + max + ", was " + value);
        }
        return value;
    }

    /** Refuses to set {@code option} of the saga again ({@code was}: its value, as the message shows it). */
    public void setOnce(String option, boolean set, Object was) {
        notSet(option + " of saga '" + saga + "'", set, was);
    }

    /**
     * A rate limit: between 1 and {@code maxStarts} starts per period of 1 ms to 1 day.
     *
     * @return the period in whole milliseconds
     */
    public Duration rateLimit(int starts, int maxStarts, Duration period) {
        if (starts < 1 || starts > maxStarts) {
            throw new CoopValidationException("rateLimit of saga '" + saga + "' must allow between 1 and "
                    + maxStarts + " starts, was " + starts);
        }
        if (period == null) {
            throw new CoopValidationException("rateLimit of saga '" + saga + "' needs a period, was null");
        }
        if (period.compareTo(Duration.ofMillis(1)) < 0 || period.compareTo(Duration.ofDays(1)) > 0) {
            throw new CoopValidationException("rateLimit period of saga '" + saga
                    + "' must be between 1 ms and 1 day, was " + period);
        }
        return Duration.ofMillis(period.toMillis());
    }

    /** A saga without steps cannot be built. */
    public void hasSteps(boolean any) {
        if (!any) {
            throw new CoopValidationException("Saga '" + saga + "' has no steps; add at least one with step()");
        }
    }

    private static void notSet(String option, boolean set, Object was) {
        if (set) {
            throw new CoopValidationException(option + " was already set to " + was);
        }
    }

    /** A timeout from 1 ms to 365 days, in whole milliseconds. */
    private static Duration timeout(String option, Duration timeout) {
        if (timeout == null) {
            throw new CoopValidationException(option + " must be a duration, was null");
        }
        if (timeout.compareTo(Duration.ofMillis(1)) < 0) {
            throw new CoopValidationException(option + " must be at least 1 ms, was " + timeout);
        }
        if (timeout.compareTo(Duration.ofDays(365)) > 0) {
            throw new CoopValidationException(option + " must be at most 365 days, was " + timeout);
        }
        return Duration.ofMillis(timeout.toMillis());
    }
}
