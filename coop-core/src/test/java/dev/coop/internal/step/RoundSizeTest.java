package dev.coop.internal.step;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** How many runs a claim takes: shared with idle workers while bodies take a while, all at once when they are quick. */
class RoundSizeTest {
    private static RoundSize capped(int cap) {
        RoundSize rounds = new RoundSize();
        rounds.cap("s", cap);
        return rounds;
    }

    @Test
    void a_run_due_alone_goes_alone_whatever_its_bodies_take() {
        RoundSize rounds = capped(8);
        assertThat(rounds.counted("s", 1, 7)).isEqualTo(1);
        rounds.bodyTook("s", 1_000);
        assertThat(rounds.counted("s", 1, 7)).isEqualTo(1);
    }

    @Test
    void runs_due_together_are_shared_with_idle_workers_until_the_bodies_are_known_to_be_quick() {
        RoundSize rounds = capped(8);
        assertThat(rounds.counted("s", 8, 7)).as("bodies not known yet: one each").isEqualTo(1);
        assertThat(rounds.searched("s", 7)).isEqualTo(1);
        rounds.bodyTook("s", 50_000);
        assertThat(rounds.quick("s")).isTrue();
        assertThat(rounds.counted("s", 8, 7)).as("quick bodies: one commit for all").isEqualTo(8);
        assertThat(rounds.counted("s", 20, 7)).as("never more than the cap").isEqualTo(8);
        assertThat(rounds.searched("s", 7)).isEqualTo(8);
    }

    @Test
    void slow_bodies_run_in_parallel_first_and_the_average_follows_them() {
        RoundSize rounds = capped(8);
        rounds.bodyTook("s", 50_000_000L);
        assertThat(rounds.quick("s")).isFalse();
        assertThat(rounds.counted("s", 8, 7)).isEqualTo(1);
        assertThat(rounds.counted("s", 16, 7)).isEqualTo(2);
        for (int i = 0; i < 64; i++) {
            rounds.bodyTook("s", 10_000);
        }
        assertThat(rounds.quick("s")).as("quick again after many quick bodies").isTrue();
        rounds.bodyTook("other", 10_000);
        assertThat(capped(8).quick("other")).isFalse();
    }
}
