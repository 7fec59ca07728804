package dev.coop.dashboard.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class LoginThrottleTest {
    final AtomicLong now = new AtomicLong();
    final LoginThrottle throttle = new LoginThrottle(now::get);

    @Test
    void a_user_waits_after_five_failures_twice_as_long_after_each_further_one_and_not_after_a_success() {
        for (int i = 0; i < LoginThrottle.PER_USER - 1; i++) {
            throttle.failed("olga", "10.0.0.1");
        }
        assertThat(throttle.wait("olga", "10.0.0.2")).isZero();
        throttle.failed("olga", "10.0.0.1");
        assertThat(throttle.wait("olga", "10.0.0.2")).as("from any address").isEqualTo(Duration.ofSeconds(1));
        assertThat(throttle.wait("vic", "10.0.0.2")).isZero();
        now.addAndGet(Duration.ofSeconds(1).toNanos());
        assertThat(throttle.wait("olga", "10.0.0.2")).isZero();
        throttle.failed("olga", "10.0.0.1");
        assertThat(throttle.wait("olga", "10.0.0.2")).isEqualTo(Duration.ofSeconds(2));
        for (int i = 0; i < 30; i++) {
            throttle.failed("olga", "10.0.0.3");
        }
        assertThat(throttle.wait("olga", "10.0.0.4")).isEqualTo(LoginThrottle.MAX_LOCK);
        throttle.succeeded("olga", "10.0.0.4");
        assertThat(throttle.wait("olga", "10.0.0.4")).isZero();
    }

    @Test
    void an_address_waits_after_twenty_failures_whatever_the_names() {
        for (int i = 0; i < LoginThrottle.PER_ADDRESS; i++) {
            throttle.failed("name" + i, "10.0.0.1");
        }
        assertThat(throttle.wait(null, "10.0.0.1")).isPositive();
        assertThat(throttle.wait("someone", "10.0.0.9")).isZero();
    }
}
