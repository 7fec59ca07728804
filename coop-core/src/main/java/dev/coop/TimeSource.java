package dev.coop;

import java.time.Clock;
import java.time.Instant;
import java.util.Objects;

/**
 * Where engines and clients read the time for every decision about when something happens: due times of launches,
 * sleeps and retries, deadlines, barrier timers, schedules and join timeouts.
 *
 * <p>
 * By default there is none, and every such decision reads the database's clock inside the statement that makes it
 * (no extra round trip), so that engines on different machines always agree. Give one to
 * {@link CoopEngine.Builder#clock(TimeSource)} and {@link CoopClient.Builder#clock(TimeSource)} to decide the time
 * yourself; every engine and client of a schema must then use the same source. Coop passes the source's time to the
 * database as a bind parameter wherever it would otherwise read the database's clock; timestamps that only record
 * when something happened (an event's or a row's {@code created_at}, engine registrations) stay on the database's
 * clock.
 *
 * <p>
 * The test kit's {@code dev.coop.test.TestClock} is one: time stands still until the test advances it, and each
 * advance wakes the engines' timers at once ({@link #onJump}).
 */
@FunctionalInterface
public interface TimeSource {
    /** The current time. */
    Instant now();

    /**
     * Registers {@code wake}, to be run whenever this source's time moves other than with the wall clock (a test
     * clock set or advanced): engines then read their due times again at once instead of waiting for timers armed
     * with the old time. The default: a source that never jumps registers nothing.
     *
     * @return what unregisters {@code wake} (engines call it when they stop)
     */
    default Runnable onJump(Runnable wake) {
        Objects.requireNonNull(wake, "wake");
        return () -> {
        };
    }

    /** A source that reads {@code clock}, for instance {@code Clock.offset(Clock.systemUTC(), skew)}. */
    static TimeSource of(Clock clock) {
        Objects.requireNonNull(clock, "clock");
        return clock::instant;
    }
}
