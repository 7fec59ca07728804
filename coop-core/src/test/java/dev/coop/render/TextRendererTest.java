package dev.coop.render;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Hierarchy;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

class TextRendererTest {
    static final TextRenderer PLAIN = new TextRenderer(RenderOptions.defaults());

    static Stream<Arguments> hierarchies() {
        return Stream.of(Arguments.of("success", Fixtures.success()), Arguments.of("rollback", Fixtures.rollback()),
                Arguments.of("failed-rollback", Fixtures.failedRollback()),
                Arguments.of("cancellation", Fixtures.cancellation()), Arguments.of("running", Fixtures.running()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("hierarchies")
    void renders_a_fixed_hierarchy_as_in_its_golden_file(String name, Hierarchy hierarchy) {
        Golden.assertMatches("tree-" + name + ".txt", Masking.mask(PLAIN.render(hierarchy)));
    }

    @Test
    void ascii_draws_the_same_tree_with_ascii_only() {
        String ascii = new TextRenderer(RenderOptions.ascii()).render(Fixtures.rollback());
        assertThat(ascii.chars()).allMatch(c -> c < 128);
        Golden.assertMatches("tree-rollback-ascii.txt", Masking.mask(ascii));
    }

    @Test
    void frames_are_shown_only_when_asked_for() {
        String withFrames = new TextRenderer(RenderOptions.defaults().withFrames(true)).render(Fixtures.rollback());
        assertThat(PLAIN.render(Fixtures.rollback())).doesNotContain("com.example.Bank.charge");
        assertThat(withFrames).contains("at com.example.Bank.charge(Bank.java:42)",
                "type java.lang.IllegalStateException");
        Golden.assertMatches("tree-rollback-frames.txt", Masking.mask(withFrames));
    }

    @Test
    void colours_are_ansi_sequences_only_when_asked_for() {
        String colored = new TextRenderer(RenderOptions.defaults().withColors(true)).render(Fixtures.rollback());
        assertThat(colored).contains("\u001b[31mROLLED_BACK\u001b[0m", "\u001b[32m✓\u001b[0m");
        assertThat(PLAIN.render(Fixtures.rollback())).doesNotContain("\u001b[");
        assertThat(colored.replaceAll("\u001b\\[[0-9;]*m", "")).isEqualTo(PLAIN.render(Fixtures.rollback()));
    }

    @Test
    void run_ids_are_shown_when_asked_for() {
        String withIds = new TextRenderer(RenderOptions.defaults().withIds(true)).render(Fixtures.success());
        assertThat(withIds).contains("run " + Fixtures.ORDER_RUN, "run " + Fixtures.PAYMENT_RUN);
        assertThat(PLAIN.render(Fixtures.success())).doesNotContain(Fixtures.ORDER_RUN.toString());
    }

    @Test
    void a_subtree_renders_from_its_run() {
        String text = PLAIN.render(Fixtures.rollback().runs().getFirst().children().getFirst());
        assertThat(text).startsWith("● run " + Fixtures.PAYMENT_RUN + "  message " + Fixtures.PAYMENT)
                .contains("└─ payment on payment-requested  ROLLED_BACK", "IllegalStateException: Card declined");
    }

    @Test
    void durations_read_like_people_write_them() {
        assertThat(TextFormat.duration(java.time.Duration.ofMillis(7))).isEqualTo("7 ms");
        assertThat(TextFormat.duration(java.time.Duration.ofMillis(1250))).isEqualTo("1.25 s");
        assertThat(TextFormat.duration(java.time.Duration.ofSeconds(123))).isEqualTo("2 m 03 s");
        assertThat(TextFormat.duration(java.time.Duration.ofMinutes(65))).isEqualTo("1 h 05 m");
    }

    @Test
    void terminal_options_follow_the_console_term_and_no_color() {
        var utf8 = java.nio.charset.StandardCharsets.UTF_8;
        assertThat(Renderers.terminalOptions(true, "xterm-256color", null, utf8).colors()).isTrue();
        assertThat(Renderers.terminalOptions(false, "xterm-256color", null, utf8).colors()).isFalse();
        assertThat(Renderers.terminalOptions(true, "dumb", null, utf8).colors()).isFalse();
        assertThat(Renderers.terminalOptions(true, "xterm", "1", utf8).colors()).isFalse();
        assertThat(Renderers.terminalOptions(true, "xterm", "", utf8).colors()).isTrue();
        assertThat(Renderers.terminalOptions(true, "xterm", null, utf8).unicode()).isTrue();
        assertThat(Renderers.terminalOptions(true, "xterm", null, java.nio.charset.StandardCharsets.US_ASCII)
                .unicode()).isFalse();
        assertThat(Renderers.isTerminal(null)).isFalse();
    }
}
