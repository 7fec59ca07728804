package dev.coop.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.failure.CoopValidationException;
import dev.coop.Topic;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
    private final Json json = new Json(Json.defaultMapper(), 64);
    private final Topic<Object> topic = Topic.of("t", Object.class);

    @Test
    void an_escaped_nul_is_found_but_an_escaped_backslash_before_u0000_text_is_not() {
        assertThat(Json.containsNul("{\"a\":\"x\\u0000\"}")).isTrue();
        assertThat(Json.containsNul("{\"a\":\"x\\\\u0000\"}")).isFalse();
        assertThat(Json.containsNul("{\"a\":\"x\\\\\\u0000\"}")).isTrue();
        assertThat(Json.containsNul("{\"a\":\"plain\"}")).isFalse();
    }

    @Test
    void payloads_over_the_limit_are_refused_with_their_size() {
        assertThatThrownBy(() -> json.writePayload(topic, Map.of("k", "x".repeat(100))))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("over the limit of 64 bytes");
    }

    @Test
    void a_payload_with_a_nul_character_is_refused() {
        assertThatThrownBy(() -> json.writePayload(topic, Map.of("k", "a\u0000b")))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("NUL");
    }
}
