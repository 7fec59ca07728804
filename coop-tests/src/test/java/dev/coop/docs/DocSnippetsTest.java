package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Docs that cannot lie: every {@code ```java} block of README.md and docs/**&#47;*.md is a region of a sample, copied
 * verbatim. Samples live in the test sources of a module (Coop's own in this package), and a test runs each.
 *
 * <p>
 * In Markdown, the line right above the block names the region: {@code <!-- snippet: name -->}. In the sample (any
 * file under a module's {@code src/test/java}), the region is the lines between {@code // tag::name[]} and
 * {@code // end::name[]} (other tag lines inside are left out); the common indentation is removed. A block of any
 * language may instead show a whole file of the repository, {@code <!-- file: path/from/the/root -->} above it (the
 * getting-started pom and test, which {@code build/user-project/check.sh} builds as they stand). Run with
 * {@code -Dcoop.docs.update=true} to copy every region and file into the docs instead of checking them.
 */
class DocSnippetsTest {
    private static final Pattern MARKER = Pattern.compile("<!-- snippet: ([a-z0-9-]+) -->");
    private static final Pattern FILE = Pattern.compile("<!-- file: ([A-Za-z0-9._/-]+) -->");
    private static final Pattern TAG = Pattern.compile("^\\s*// (tag|end)::([a-z0-9-]+)\\[]\\s*$");
    private static final boolean UPDATE = Boolean.getBoolean("coop.docs.update");

    @Test
    void every_java_block_in_the_docs_is_a_region_of_a_compiled_sample() throws IOException {
        Path root = projectRoot();
        Map<String, String> regions = new LinkedHashMap<>();
        try (Stream<Path> modules = Files.list(root)) {
            for (Path tests : modules.map(m -> m.resolve("src/test/java")).filter(Files::isDirectory).sorted()
                    .toList()) {
                regions(tests, regions);
            }
        }
        List<String> problems = new ArrayList<>();
        for (Path doc : docs(root)) {
            String text = Files.readString(doc, StandardCharsets.UTF_8);
            String checked = check(root, root.relativize(doc).toString(), text, regions, problems);
            if (UPDATE && !checked.equals(text)) {
                Files.writeString(doc, checked, StandardCharsets.UTF_8);
            }
        }
        assertThat(problems).as("Java blocks of the docs that are not their sample's region (mark each block with"
                + " <!-- snippet: name --> on the line above, tag the region in a sample under a module's src/test/java,"
                + " and run with -Dcoop.docs.update=true to copy regions into the docs)").isEmpty();
    }

    /**
     * Checks each Java block, and each block marked as a file, of one document; returns the document with every such
     * block replaced by its region or file.
     */
    private static String check(Path root, String name, String text, Map<String, String> regions,
            List<String> problems) throws IOException {
        String[] lines = text.split("\n", -1);
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            Matcher file = i > 0 && line.strip().startsWith("```") ? FILE.matcher(lines[i - 1].strip()) : null;
            if (file != null && file.matches()) {
                int end = closingFence(lines, i);
                String block = String.join("\n", List.of(lines).subList(i + 1, end));
                Path shown = root.resolve(file.group(1)).normalize();
                String content = shown.startsWith(root) && Files.isRegularFile(shown)
                        ? normalize(Files.readString(shown, StandardCharsets.UTF_8))
                        : null;
                if (content == null) {
                    problems.add(name + ":" + (i + 1) + ": no file " + file.group(1) + " in the repository");
                } else if (!normalize(block).equals(content)) {
                    problems.add(name + ":" + (i + 1) + ": the block differs from the file " + file.group(1)
                            + ":\n--- docs\n" + normalize(block) + "\n--- file\n" + content);
                }
                out.append(line).append("\n").append(content == null ? block : content).append("\n");
                i = end - 1; // the closing fence is copied next
                continue;
            }
            if (!line.strip().equals("```java")) {
                out.append(line).append(i < lines.length - 1 ? "\n" : "");
                continue;
            }
            int end = i + 1;
            while (end < lines.length && !lines[end].strip().equals("```")) {
                end++;
            }
            String block = String.join("\n", List.of(lines).subList(i + 1, Math.min(end, lines.length)));
            Matcher marker = i > 0 ? MARKER.matcher(lines[i - 1].strip()) : null;
            String region = null;
            if (marker == null || !marker.matches()) {
                problems.add(name + ":" + (i + 1) + ": a Java block without <!-- snippet: name --> above it");
            } else if ((region = regions.get(marker.group(1))) == null) {
                problems.add(name + ":" + (i + 1) + ": no region '" + marker.group(1) + "' in the samples");
            } else if (!normalize(block).equals(region)) {
                problems.add(name + ":" + (i + 1) + ": the block differs from region '" + marker.group(1)
                        + "':\n--- docs\n" + normalize(block) + "\n--- sample\n" + region);
            }
            out.append(line).append("\n").append(region == null ? block : region).append("\n");
            i = end - 1; // the closing fence is copied next
        }
        return out.toString();
    }

    /** Adds every tagged region of the Java files below {@code dir}, by name, normalized. */
    static void regions(Path dir, Map<String, String> regions) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
                List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
                Map<String, List<String>> open = new LinkedHashMap<>();
                for (String line : lines) {
                    Matcher tag = TAG.matcher(line);
                    if (tag.matches() && tag.group(1).equals("tag")) {
                        open.put(tag.group(2), new ArrayList<>());
                    } else if (tag.matches()) {
                        List<String> body = open.remove(tag.group(2));
                        if (body == null) {
                            throw new AssertionError(file + ": end::" + tag.group(2) + "[] without its tag");
                        }
                        if (regions.put(tag.group(2), normalize(String.join("\n", body))) != null) {
                            throw new AssertionError(file + ": region '" + tag.group(2) + "' defined twice");
                        }
                    } else {
                        open.values().forEach(body -> body.add(line));
                    }
                }
                if (!open.isEmpty()) {
                    throw new AssertionError(file + ": regions never ended: " + open.keySet());
                }
            }
        }
    }

    /** Trailing spaces, leading and trailing blank lines and the common indentation removed. */
    static String normalize(String block) {
        List<String> lines = new ArrayList<>(block.lines().map(String::stripTrailing).toList());
        while (!lines.isEmpty() && lines.getFirst().isEmpty()) {
            lines.removeFirst();
        }
        while (!lines.isEmpty() && lines.getLast().isEmpty()) {
            lines.removeLast();
        }
        int indent = lines.stream().filter(l -> !l.isEmpty())
                .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
        return String.join("\n", lines.stream().map(l -> l.isEmpty() ? l : l.substring(indent)).toList());
    }

    /** The index of the fence that closes the block opened at {@code open} (or the end of the text). */
    private static int closingFence(String[] lines, int open) {
        int end = open + 1;
        while (end < lines.length && !lines[end].strip().equals("```")) {
            end++;
        }
        return Math.min(end, lines.length);
    }

    /** README.md and every Markdown file below docs/, the guide's included. */
    static List<Path> docs(Path root) throws IOException {
        List<Path> docs = new ArrayList<>();
        docs.add(root.resolve("README.md"));
        try (Stream<Path> files = Files.walk(root.resolve("docs"))) {
            files.filter(f -> f.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        return docs;
    }

    static Path projectRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !(Files.exists(dir.resolve("README.md")) && Files.isDirectory(dir.resolve("docs")))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new UncheckedIOException(
                    new IOException("No README.md and docs/ above " + Path.of("").toAbsolutePath()));
        }
        return dir;
    }
}
