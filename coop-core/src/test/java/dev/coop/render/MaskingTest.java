package dev.coop.render;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class MaskingTest {
    @Test
    void ids_are_numbered_by_first_appearance_so_equal_ids_stay_equal() {
        String a = "01900000-0000-7000-8000-000000000001";
        String b = "01900000-0000-7000-8000-0000000000A2";
        assertThat(Masking.mask(a + " " + b + " " + a.toUpperCase() + " [" + a + "]"))
                .isEqualTo("<id1> <id2> <id1> [<id1>]");
    }

    @Test
    void engine_ids_keep_their_name() {
        assertThat(Masking.mask("payment[bank-9f8e7d6c] by bank-9f8e7d6c and billing-svc-0a1b2c3d"))
                .isEqualTo("payment[bank-<e1>] by bank-<e1> and billing-svc-<e2>");
        assertThat(Masking.mask("create-customer and reserve-stock stay")).isEqualTo(
                "create-customer and reserve-stock stay");
    }

    @Test
    void times_and_durations_become_placeholders() {
        assertThat(Masking.mask("launched 2026-03-01 09:30:00.000 UTC in 45 ms, 1.25 s, 2 m 03 s, 1 h 05 m"))
                .isEqualTo("launched <time> in <dur>, <dur>, <dur>, <dur>");
        assertThat(Masking.mask("{\"createdAt\":\"2026-03-01T09:30:00.012Z\",\"durationMs\":17}"))
                .isEqualTo("{\"createdAt\":\"<time>\",\"durationMs\":\"<dur>\"}");
        assertThat(Masking.mask("launched 1  rolled back 1 message  3 steps")).isEqualTo(
                "launched 1  rolled back 1 message  3 steps");
    }
}
