package dev.coop.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class TestClockTest {
    static final Instant START = Instant.parse("2026-01-01T00:00:00Z");

    @Test
    void time_stands_still_until_advanced() {
        TestClock clock = new TestClock(START);
        assertThat(clock.now()).isEqualTo(START);
        assertThat(clock.instant()).isEqualTo(START);
        assertThat(clock.advance(Duration.ofHours(24))).isEqualTo(START.plus(Duration.ofDays(1)));
        assertThat(clock.now()).isEqualTo(START.plus(Duration.ofDays(1)));
        assertThat(clock.withZone(ZoneId.of("Europe/Paris")).instant()).isEqualTo(clock.now());
    }

    @Test
    void every_advance_and_set_wakes_the_registered_engines_until_they_unregister() {
        TestClock clock = new TestClock(START);
        AtomicInteger wakes = new AtomicInteger();
        Runnable unregister = clock.onJump(wakes::incrementAndGet);
        clock.advance(Duration.ofMinutes(10));
        clock.set(START);
        assertThat(wakes).hasValue(2);
        unregister.run();
        clock.advance(Duration.ofMinutes(10));
        assertThat(wakes).hasValue(2);
    }

    @Test
    void time_does_not_advance_backwards() {
        TestClock clock = new TestClock(START);
        assertThatThrownBy(() -> clock.advance(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT-1S");
        assertThat(clock.now()).isEqualTo(START);
    }

    @Test
    void a_new_clock_starts_at_the_wall_clock_to_the_millisecond() {
        Instant before = Instant.now().minusMillis(1);
        Instant now = new TestClock().now();
        assertThat(now).isAfterOrEqualTo(before).isBeforeOrEqualTo(Instant.now());
        assertThat(now.getNano() % 1_000_000).isZero();
    }
}
