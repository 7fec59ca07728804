package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.RunStatus;
import dev.coop.inspect.EventType;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The life of a run (docs/images/run-life.svg, drawn by hand from docs/protocol.md) stays complete: it names every
 * status a run row can have and every event type, so that a new one cannot be added without drawing it.
 */
class RunLifePictureTest {
    @Test
    void the_picture_of_a_run_s_life_names_every_status_and_every_event() throws IOException {
        String svg = Files.readString(DocSnippetsTest.projectRoot().resolve("docs/images/run-life.svg"),
                StandardCharsets.UTF_8);
        String text = svg.replaceAll("<[^>]*>", " "); // the words drawn, not the markup
        assertThat(Stream.concat(Arrays.stream(RunStatus.values()), Arrays.stream(EventType.values()))
                .map(Enum::name).filter(name -> !text.contains(name)).distinct())
                .as("statuses and events the picture does not name").isEmpty();
    }
}
