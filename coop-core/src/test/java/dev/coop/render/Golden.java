package dev.coop.render;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Compares text with a golden file under {@code src/test/resources/golden}. Run with {@code -Dgolden.update=true} to
 * (re)write the files instead, then review the diff.
 */
public final class Golden {
    private Golden() {
    }

    public static void assertMatches(String name, String actual) {
        Path file = Path.of("src", "test", "resources", "golden", name);
        try {
            if (Boolean.getBoolean("golden.update") || !Files.exists(file)) {
                Files.createDirectories(file.getParent());
                Files.writeString(file, actual, StandardCharsets.UTF_8);
                if (!Boolean.getBoolean("golden.update")) {
                    throw new AssertionError("Golden file " + file.toAbsolutePath()
                            + " did not exist; it was written now: review it and run the test again");
                }
                return;
            }
            String expected = Files.readString(file, StandardCharsets.UTF_8);
            assertThat(actual).as("rendering compared with golden file %s (rewrite with -Dgolden.update=true)", file)
                    .isEqualTo(expected);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
