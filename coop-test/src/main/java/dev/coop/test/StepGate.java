package dev.coop.test;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Holds steps at a point of the test's choosing: a step calls {@link #pass()} and blocks there until the test calls
 * {@link #open()}. The test learns that steps arrived with {@link #awaitArrivals(int, Duration)}, so it can check
 * what the rest of the system does while those steps are in flight, without sleeping.
 *
 * <pre>{@code
 * StepGate gate = new StepGate();
 * Saga<Order> slow = Saga.on(ORDERS, "slow").step("hold", step -> gate.pass()).build();
 * ...
 * gate.awaitArrivals(1, Duration.ofSeconds(10));
 * // assert on the state while the step is held
 * gate.open();
 * }</pre>
 *
 * <p>
 * A step never waits forever: if the gate is not opened within the hold limit (30 s unless configured), {@code pass()}
 * throws, so a failing test does not leave engine threads blocked. Thread-safe.
 */
public final class StepGate {
    /** How long {@link #pass()} blocks at most unless configured otherwise. */
    public static final Duration DEFAULT_HOLD_LIMIT = Duration.ofSeconds(30);

    private final CountDownLatch open = new CountDownLatch(1);
    private final AtomicInteger arrivals = new AtomicInteger();
    private final Duration holdLimit;

    /** A closed gate that holds steps for at most {@link #DEFAULT_HOLD_LIMIT}. */
    public StepGate() {
        this(DEFAULT_HOLD_LIMIT);
    }

    /**
     * A closed gate.
     *
     * @param holdLimit how long a step blocks in {@link #pass()} at most before it throws
     */
    public StepGate(Duration holdLimit) {
        this.holdLimit = Objects.requireNonNull(holdLimit, "holdLimit");
        if (holdLimit.isNegative()) {
            throw new IllegalArgumentException("holdLimit must not be negative, but was " + holdLimit);
        }
    }

    /**
     * Called from a step: counts the arrival, then blocks until the gate is open.
     *
     * @throws InterruptedException if the step's thread is interrupted while held (e.g. by a shutdown timeout)
     * @throws IllegalStateException if the gate was not opened within the hold limit
     */
    public void pass() throws InterruptedException {
        arrivals.incrementAndGet();
        if (!open.await(holdLimit.toNanos(), TimeUnit.NANOSECONDS)) {
            throw new IllegalStateException("StepGate was not opened within " + Await.format(holdLimit)
                    + "; did the test forget to call open()?");
        }
    }

    /** Lets every held step, and every later one, through. */
    public void open() {
        open.countDown();
    }

    /** Whether {@link #open()} was called. */
    public boolean isOpen() {
        return open.getCount() == 0;
    }

    /** How many times {@link #pass()} was called so far. */
    public int arrivals() {
        return arrivals.get();
    }

    /**
     * Waits until at least {@code count} steps called {@link #pass()}.
     *
     * @throws AssertionError if they did not arrive within {@code timeout}
     */
    public void awaitArrivals(int count, Duration timeout) {
        Await.until(count + " step(s) to arrive at the gate", timeout, () -> arrivals.get() >= count);
    }
}
