package dev.coop;

import dev.coop.failure.CoopValidationException;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * How a step retries its own failures: up to {@code maxAttempts} attempts, waiting durably between them (no thread
 * or connection held; restarts keep the schedule). Immutable; each method returns a changed copy.
 *
 * <pre>{@code
 * RetryPolicy.attempts(5).initialDelay(Duration.ofMillis(200)).multiplier(2).maxDelay(Duration.ofSeconds(30))
 *         .retryOn(IOException.class).parkWhenExhausted()
 * }</pre>
 */
public final class RetryPolicy {
    private final int maxAttempts;
    private final Duration initialDelay;
    private final double multiplier;
    private final Duration maxDelay;
    private final List<Class<? extends Throwable>> retryOn;
    private final List<Class<? extends Throwable>> abortOn;
    private final boolean park;

    private RetryPolicy(int maxAttempts, Duration initialDelay, double multiplier, Duration maxDelay,
            List<Class<? extends Throwable>> retryOn, List<Class<? extends Throwable>> abortOn, boolean park) {
        this.maxAttempts = maxAttempts;
        this.initialDelay = initialDelay;
        this.multiplier = multiplier;
        this.maxDelay = maxDelay;
        this.retryOn = retryOn;
        this.abortOn = abortOn;
        this.park = park;
    }

    /** At most {@code maxAttempts} attempts in all (1 = no retry); 1 s initial delay, doubling, at most 5 min. */
    public static RetryPolicy attempts(int maxAttempts) {
        if (maxAttempts < 1 || maxAttempts > 1_000_000) {
            throw new CoopValidationException("maxAttempts must be between 1 and 1000000, was " + maxAttempts);
        }
        return new RetryPolicy(maxAttempts, Duration.ofSeconds(1), 2.0, Duration.ofMinutes(5), List.of(), List.of(),
                false);
    }

    /** The wait before the second attempt. */
    public RetryPolicy initialDelay(Duration delay) {
        dev.coop.internal.store.InputLimits.delay("initialDelay", delay);
        return new RetryPolicy(maxAttempts, delay, multiplier, maxDelay, retryOn, abortOn, park);
    }

    /** Each further wait is the previous one times this (at least 1). */
    public RetryPolicy multiplier(double multiplier) {
        if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
            throw new CoopValidationException("multiplier must be a finite number >= 1, was " + multiplier);
        }
        return new RetryPolicy(maxAttempts, initialDelay, multiplier, maxDelay, retryOn, abortOn, park);
    }

    /** No wait is longer than this. */
    public RetryPolicy maxDelay(Duration delay) {
        dev.coop.internal.store.InputLimits.delay("maxDelay", delay);
        return new RetryPolicy(maxAttempts, initialDelay, multiplier, delay, retryOn, abortOn, park);
    }

    /** Only these failures (or their subclasses, anywhere in the cause chain) are retried; default: all. */
    @SafeVarargs
    public final RetryPolicy retryOn(Class<? extends Throwable>... transientTypes) {
        return new RetryPolicy(maxAttempts, initialDelay, multiplier, maxDelay, concat(retryOn, transientTypes),
                abortOn, park);
    }

    /** These failures are never retried, even if {@link #retryOn} matches. */
    @SafeVarargs
    public final RetryPolicy abortOn(Class<? extends Throwable>... permanentTypes) {
        return new RetryPolicy(maxAttempts, initialDelay, multiplier, maxDelay, retryOn,
                concat(abortOn, permanentTypes), park);
    }

    /**
     * When attempts are exhausted, park the run for an operator (see {@link CoopClient#parkedRuns}) instead of
     * rolling it back.
     */
    public RetryPolicy parkWhenExhausted() {
        return new RetryPolicy(maxAttempts, initialDelay, multiplier, maxDelay, retryOn, abortOn, true);
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    public boolean parksWhenExhausted() {
        return park;
    }

    /** Whether a failure of attempt {@code attempt} should be followed by another attempt. */
    public boolean shouldRetry(Throwable failure, int attempt) {
        return attempt < maxAttempts && isTransient(failure);
    }

    /** Whether the policy treats {@code failure} as transient. */
    public boolean isTransient(Throwable failure) {
        if (matches(abortOn, failure)) {
            return false;
        }
        return retryOn.isEmpty() || matches(retryOn, failure);
    }

    /** The wait after failed attempt number {@code attempt} (1-based). */
    public Duration delayAfter(int attempt) {
        double millis = initialDelay.toMillis() * Math.pow(multiplier, Math.max(0, attempt - 1));
        return millis >= maxDelay.toMillis() ? maxDelay : Duration.ofMillis((long) millis);
    }

    private static boolean matches(List<Class<? extends Throwable>> types, Throwable failure) {
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable t = failure; t != null && seen.size() < 1_000 && seen.add(t); t = t.getCause()) {
            for (Class<? extends Throwable> type : types) {
                if (type.isInstance(t)) {
                    return true;
                }
            }
        }
        return false;
    }

    @SafeVarargs
    private static List<Class<? extends Throwable>> concat(List<Class<? extends Throwable>> list,
            Class<? extends Throwable>... more) {
        for (Class<? extends Throwable> c : more) {
            Objects.requireNonNull(c, "exception type");
        }
        return Stream.concat(list.stream(), Stream.of(more)).toList();
    }

    @Override
    public String toString() {
        return "RetryPolicy[" + maxAttempts + " attempts, " + initialDelay + " x" + multiplier + " up to " + maxDelay
                + (park ? ", park when exhausted" : "") + "]";
    }
}
