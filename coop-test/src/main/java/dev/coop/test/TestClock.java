package dev.coop.test;

import dev.coop.TimeSource;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A clock a test drives: time stands still until the test {@link #advance advances} it, and every advance wakes the
 * timers of the engines that use it at once, so that a 24-hour sleep, a missed deadline, a retry backoff, a cron
 * schedule or a join timeout completes in milliseconds, through the same statements as in production.
 *
 * <pre>{@code
 * TestClock clock = new TestClock();
 * CoopEngine engine = Coop.engine(dataSource).clock(clock).register(saga).start();
 * MessageId id = engine.client().launch(topic, payload);   // the saga sleeps 24 hours
 * clock.advance(Duration.ofHours(24));                      // and wakes now
 * engine.client().awaitCompletion(id, Duration.ofSeconds(10));
 * }</pre>
 *
 * Give the same clock to every engine and client of the schema ({@link dev.coop.CoopEngine.Builder#clock},
 * {@link dev.coop.CoopClient.Builder#clock}). It is also a {@link Clock} (in UTC) for the test's own code. It starts
 * at the wall clock's time (to the millisecond), so that the timestamps the database records itself stay near it.
 * Thread-safe.
 */
public final class TestClock extends Clock implements TimeSource {
    private final List<Runnable> wakes = new CopyOnWriteArrayList<>();
    private volatile Instant now;

    /** A clock at the wall clock's time, to the millisecond. */
    public TestClock() {
        this(Instant.now().truncatedTo(ChronoUnit.MILLIS));
    }

    /** A clock at {@code start}. */
    public TestClock(Instant start) {
        this.now = Objects.requireNonNull(start, "start");
    }

    @Override
    public Instant now() {
        return now;
    }

    @Override
    public Instant instant() {
        return now;
    }

    /**
     * Moves the time forward by {@code duration} and wakes the engines' timers.
     *
     * @return the new time
     * @throws IllegalArgumentException when {@code duration} is negative (time does not go back; use {@link #set})
     */
    public Instant advance(Duration duration) {
        Objects.requireNonNull(duration, "duration");
        if (duration.isNegative()) {
            throw new IllegalArgumentException("A test clock advances by a positive duration, not " + duration);
        }
        Instant after;
        synchronized (this) {
            after = now.plus(duration);
            now = after;
        }
        jumped();
        return after;
    }

    /** Sets the time (also backwards, to test what happens then) and wakes the engines' timers. */
    public void set(Instant instant) {
        now = Objects.requireNonNull(instant, "instant");
        jumped();
    }

    @Override
    public Runnable onJump(Runnable wake) {
        Objects.requireNonNull(wake, "wake");
        wakes.add(wake);
        return () -> wakes.remove(wake);
    }

    private void jumped() {
        for (Runnable wake : wakes) {
            wake.run();
        }
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        TestClock source = this;
        return new Clock() {
            @Override
            public ZoneId getZone() {
                return zone;
            }

            @Override
            public Clock withZone(ZoneId other) {
                return source.withZone(other);
            }

            @Override
            public Instant instant() {
                return source.now;
            }
        };
    }

    @Override
    public String toString() {
        return "TestClock[" + now + "]";
    }
}
