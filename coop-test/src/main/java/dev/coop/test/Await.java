package dev.coop.test;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waits for a condition in tests without sleeping blindly: the condition is checked at once, then again after short
 * pauses that grow from 1 ms to at most 25 ms, until it holds or the timeout passes. The condition is always checked
 * once more at the deadline. An exception thrown by the condition ends the wait at once and reaches the caller
 * unchanged.
 */
public final class Await {

    private static final long FIRST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long MAX_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(25);

    private Await() {
    }

    /**
     * Waits until a condition holds.
     *
     * @param description what is awaited, for the failure message, such as {@code "the job to complete"}
     * @param timeout how long to wait at most; zero checks once
     * @param condition checked repeatedly on the calling thread
     * @throws AssertionError {@code "Timed out after <timeout> waiting for <description>"} if the condition did not hold
     *         in time, or a message naming the description if the calling thread was interrupted (its interrupt flag
     *         stays set)
     */
    public static void until(String description, Duration timeout, BooleanSupplier condition) {
        Objects.requireNonNull(condition, "condition");
        value(description, timeout, () -> condition.getAsBoolean() ? Boolean.TRUE : null);
    }

    /**
     * Waits until a supplier returns something other than {@code null}.
     *
     * @param <T> the type of the value
     * @param description what is awaited, for the failure message, such as {@code "the job's result"}
     * @param timeout how long to wait at most; zero asks once
     * @param supplier asked repeatedly on the calling thread
     * @return the first value that is not {@code null}
     * @throws AssertionError {@code "Timed out after <timeout> waiting for <description>"} if only {@code null} came in
     *         time, or a message naming the description if the calling thread was interrupted (its interrupt flag
     *         stays set)
     */
    public static <T> T value(String description, Duration timeout, Supplier<T> supplier) {
        Objects.requireNonNull(description, "description");
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(supplier, "supplier");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must not be negative, but was " + timeout);
        }
        long timeoutNanos = saturatedNanos(timeout);
        long deadline = System.nanoTime() + timeoutNanos;
        long pause = FIRST_PAUSE_NANOS;
        while (true) {
            T value = supplier.get();
            if (value != null) {
                return value;
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                throw new AssertionError(
                        "Timed out after " + format(timeout) + " waiting for " + description);
            }
            if (Thread.currentThread().isInterrupted()) {
                throw new AssertionError("Interrupted while waiting for " + description);
            }
            LockSupport.parkNanos(Math.min(pause, remaining));
            pause = Math.min(pause * 2, MAX_PAUSE_NANOS);
        }
    }

    private static long saturatedNanos(Duration timeout) {
        try {
            return Math.min(timeout.toNanos(), Long.MAX_VALUE / 2);
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE / 2;
        }
    }

    /** Formats a duration the way people write it: {@code 5s}, {@code 1.5s}, {@code 200ms}, {@code 2m}. */
    static String format(Duration duration) {
        long millis = saturatedNanos(duration) / 1_000_000;
        if (millis < 1_000) {
            return millis + "ms";
        }
        if (millis % 60_000 == 0) {
            return millis / 60_000 + "m";
        }
        if (millis % 1_000 == 0) {
            return millis / 1_000 + "s";
        }
        return Duration.ofMillis(millis).toSeconds() + "."
                + String.format(Locale.ROOT, "%03d", millis % 1_000).replaceAll("0+$", "")
                + "s";
    }
}
