package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every import of coop-core's main sources is used by code. An import kept only for a {@code {@link}} in Javadoc (or
 * not used at all) is still a dependency between packages: such imports made import circles of their own, between the
 * API and the internals. Javadoc names such a type fully qualified instead.
 */
class ImportsTest {
    /** Comments, text blocks, strings and characters: what is not code. */
    private static final Pattern NOT_CODE = Pattern.compile(
            "/\\*.*?\\*/|//[^\\n]*|\"\"\".*?\"\"\"|\"(?:\\\\.|[^\"\\\\\\n])*\"|'(?:\\\\.|[^'\\\\\\n])*'",
            Pattern.DOTALL);
    private static final Pattern IMPORT = Pattern.compile("^import\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);
    private static final Pattern HEADER = Pattern.compile("^\\s*(?:package|import)\\s[^;]+;", Pattern.MULTILINE);

    @Test
    void every_import_of_the_main_sources_is_used_by_code_not_only_by_javadoc() throws IOException {
        List<String> problems = new ArrayList<>();
        int checked = 0;
        try (Stream<Path> files = Files.walk(Path.of("src/main/java"))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
                String source = Files.readString(file);
                String code = HEADER.matcher(NOT_CODE.matcher(source).replaceAll(" ")).replaceAll(" ");
                Matcher imports = IMPORT.matcher(source);
                while (imports.find()) {
                    checked++;
                    String imported = imports.group(1);
                    String simpleName = imported.substring(imported.lastIndexOf('.') + 1);
                    if (!Pattern.compile("\\b" + Pattern.quote(simpleName) + "\\b").matcher(code).find()) {
                        problems.add(file + ": " + imported + " is not used by code; name it fully qualified in"
                                + " Javadoc and remove the import");
                    }
                }
            }
        }
        assertThat(checked).as("imports checked").isGreaterThan(500);
        assertThat(problems).isEmpty();
    }

    @Test
    void an_import_used_only_in_javadoc_is_found() {
        String source = """
                package dev.coop.x;

                import dev.coop.failure.CoopValidationException;
                import java.util.List;

                /** Throws a {@link CoopValidationException}. */
                class X {
                    List<String> names = List.of("CoopValidationException"); // CoopValidationException
                }
                """;
        String code = HEADER.matcher(NOT_CODE.matcher(source).replaceAll(" ")).replaceAll(" ");
        assertThat(code).doesNotContain("CoopValidationException").contains("List<String>");
    }
}
