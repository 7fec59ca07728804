package dev.coop.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class AwaitTest {

    @Test
    void until_returns_once_the_condition_holds() {
        AtomicInteger checks = new AtomicInteger();

        Await.until("the third check", Duration.ofSeconds(5), () -> checks.incrementAndGet() == 3);

        assertThat(checks).hasValue(3);
    }

    @Test
    void until_times_out_with_the_description_in_the_message() {
        long start = System.nanoTime();

        assertThatThrownBy(() -> Await.until("the impossible", Duration.ofMillis(100), () -> false))
                .isInstanceOf(AssertionError.class)
                .hasMessage("Timed out after 100ms waiting for the impossible");

        assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(Duration.ofMillis(100),
                Duration.ofSeconds(5));
    }

    @Test
    void until_with_a_zero_timeout_checks_once() {
        AtomicInteger checks = new AtomicInteger();

        assertThatThrownBy(() -> Await.until("nothing", Duration.ZERO, () -> checks.incrementAndGet() < 0))
                .hasMessage("Timed out after 0ms waiting for nothing");
        assertThat(checks).hasValue(1);
    }

    @Test
    void value_returns_the_first_value_that_is_not_null() {
        AtomicInteger calls = new AtomicInteger();

        String value = Await.value("a greeting", Duration.ofSeconds(5),
                () -> calls.incrementAndGet() < 4 ? null : "hello " + calls.get());

        assertThat(value).isEqualTo("hello 4");
    }

    @Test
    void value_times_out_with_the_description_in_the_message() {
        assertThatThrownBy(() -> Await.value("a value", Duration.ofMillis(50), () -> null))
                .isInstanceOf(AssertionError.class)
                .hasMessage("Timed out after 50ms waiting for a value");
    }

    @Test
    void exceptions_from_the_condition_propagate_at_once() {
        AtomicInteger checks = new AtomicInteger();
        IllegalStateException boom = new IllegalStateException("boom");

        assertThatThrownBy(() -> Await.until("a broken condition", Duration.ofSeconds(30), () -> {
            checks.incrementAndGet();
            throw boom;
        })).isSameAs(boom);
        assertThat(checks).hasValue(1);
    }

    @Test
    void a_condition_met_by_another_thread_ends_the_wait() throws InterruptedException {
        AtomicInteger flag = new AtomicInteger();
        Thread setter = Thread.ofVirtual().start(() -> flag.set(1));

        Await.until("the other thread to set the flag", Duration.ofSeconds(10), () -> flag.get() == 1);

        setter.join();
    }

    @Test
    void an_interrupted_wait_fails_and_keeps_the_interrupt() {
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> Await.until("never", Duration.ofSeconds(30), () -> false))
                    .hasMessage("Interrupted while waiting for never");
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }

    @Test
    void timeouts_are_written_the_way_people_write_them() {
        assertThat(Await.format(Duration.ofMillis(250))).isEqualTo("250ms");
        assertThat(Await.format(Duration.ofSeconds(5))).isEqualTo("5s");
        assertThat(Await.format(Duration.ofMillis(2_250))).isEqualTo("2.25s");
        assertThat(Await.format(Duration.ofMinutes(2))).isEqualTo("2m");
    }

    @Test
    void a_negative_timeout_is_rejected() {
        assertThatThrownBy(() -> Await.until("x", Duration.ofMillis(-1), () -> true))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
