package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every relative link of README.md and docs/**&#47;*.md leads somewhere: to a file or folder of the repository, and,
 * with an anchor, to a heading of that Markdown file (GitHub's anchors: the heading in lower case, punctuation left
 * out, spaces as hyphens, a repeated heading numbered {@code -1}, {@code -2}, ...). Links in code blocks and code spans
 * are not links; links to the web are not followed.
 */
class DocLinksTest {
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
    private static final Pattern CODE_SPAN = Pattern.compile("`[^`]*`");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");

    @Test
    void every_relative_link_in_the_docs_resolves_to_a_file_and_heading() throws IOException {
        Path root = DocSnippetsTest.projectRoot();
        Map<Path, Set<String>> anchors = new HashMap<>();
        List<String> problems = new ArrayList<>();
        int checked = 0;
        for (Path doc : DocSnippetsTest.docs(root)) {
            String name = root.relativize(doc).toString();
            List<String> lines = proseLines(Files.readString(doc, StandardCharsets.UTF_8));
            for (int i = 0; i < lines.size(); i++) {
                Matcher link = LINK.matcher(CODE_SPAN.matcher(lines.get(i)).replaceAll(""));
                while (link.find()) {
                    String target = link.group(1);
                    if (target.matches("^[a-z][a-z0-9+.-]*:.*")) {
                        continue; // https:, mailto:
                    }
                    checked++;
                    String problem = problem(root, doc, target, anchors);
                    if (problem != null) {
                        problems.add(name + ":" + (i + 1) + ": " + target + ": " + problem);
                    }
                }
            }
        }
        assertThat(checked).as("links found").isGreaterThan(100);
        assertThat(problems).as("links of the docs that lead nowhere").isEmpty();
    }

    private static String problem(Path root, Path doc, String target, Map<Path, Set<String>> anchors)
            throws IOException {
        int hash = target.indexOf('#');
        String path = hash < 0 ? target : target.substring(0, hash);
        String anchor = hash < 0 ? null : target.substring(hash + 1);
        Path file = path.isEmpty() ? doc : doc.getParent().resolve(path).normalize();
        if (!file.startsWith(root)) {
            return "outside the repository";
        }
        if (!Files.exists(file)) {
            return "no such file";
        }
        if (anchor == null || !file.toString().endsWith(".md")) {
            return null;
        }
        Set<String> known = anchors.computeIfAbsent(file, DocLinksTest::anchorsOf);
        return known.contains(anchor) ? null : "no heading with anchor #" + anchor;
    }

    /** The anchors GitHub gives the headings of a Markdown file. */
    private static Set<String> anchorsOf(Path file) {
        try {
            Set<String> anchors = new HashSet<>();
            Map<String, Integer> seen = new HashMap<>();
            for (String line : proseLines(Files.readString(file, StandardCharsets.UTF_8))) {
                Matcher heading = HEADING.matcher(line);
                if (heading.matches()) {
                    String slug = slug(heading.group(1));
                    int n = seen.merge(slug, 1, Integer::sum);
                    anchors.add(n == 1 ? slug : slug + "-" + (n - 1));
                }
            }
            return anchors;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** GitHub's anchor of a heading: lower case; letters, digits, spaces, hyphens, underscores; spaces as hyphens. */
    static String slug(String heading) {
        String text = heading.replaceAll("\\[([^\\]]*)]\\([^)]*\\)", "$1"); // a link in a heading: its text
        return text.toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
    }

    /** The lines of a Markdown text with those inside fenced code blocks blanked (line numbers stay). */
    private static List<String> proseLines(String text) {
        List<String> lines = new ArrayList<>();
        boolean fenced = false;
        for (String line : text.split("\n", -1)) {
            if (line.strip().startsWith("```")) {
                fenced = !fenced;
                lines.add("");
            } else {
                lines.add(fenced ? "" : line);
            }
        }
        return lines;
    }
}
