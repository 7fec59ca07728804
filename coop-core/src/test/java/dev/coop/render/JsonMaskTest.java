package dev.coop.render;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.failure.CoopValidationException;
import java.util.List;
import org.junit.jupiter.api.Test;

class JsonMaskTest {
    @Test
    void masked_fields_show_as_stars_at_any_depth_by_name_or_pattern_without_regard_to_case() {
        JsonMask mask = JsonMask.of(List.of("password", "*token*", "card*"));
        String json = """
                {"user":"ann","Password":"s3cret","auth":{"accessToken":"abc","refresh_TOKEN_2":{"x":1}},
                 "cards":[{"cardNumber":"4111","holder":"ann"}],"tokenless":"shown?"}""";

        assertThat(mask.apply(json)).isEqualTo("{\"user\":\"ann\",\"Password\":\"***\",\"auth\":{\"accessToken\":"
                + "\"***\",\"refresh_TOKEN_2\":\"***\"},\"cards\":\"***\",\"tokenless\":\"***\"}");
        assertThat(JsonMask.of(List.of("cardNumber")).apply(json)).contains("\"cardNumber\":\"***\"",
                "\"holder\":\"ann\"", "\"Password\":\"s3cret\"");
    }

    @Test
    void no_patterns_and_text_that_is_not_json_are_left_as_they_are() {
        assertThat(JsonMask.NONE.apply("{\"password\":\"x\"}")).isEqualTo("{\"password\":\"x\"}");
        assertThat(JsonMask.of(List.of("password")).apply("not json")).isEqualTo("not json");
        assertThat(JsonMask.parse(" password , *token* ").patterns()).containsExactly("password", "*token*");
        assertThat(JsonMask.parse("  ")).isSameAs(JsonMask.NONE);
    }

    @Test
    void a_pattern_with_other_characters_is_refused_with_its_name() {
        assertThatThrownBy(() -> JsonMask.of(List.of("pass word")))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("'pass word'");
        assertThatThrownBy(() -> JsonMask.of(List.of("")))
                .isInstanceOf(CoopValidationException.class);
    }
}
