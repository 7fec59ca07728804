package dev.coop.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The demo's cooperation tree as an SVG picture for the docs (docs/images/demo-tree.svg), drawn from a hierarchy the
 * demo ran: a box per run (its saga, the service whose engine ran it, the topic it handled, its steps and the topics
 * each step launched), each run below the run whose step launched it. Only what every run of the scenario has in
 * common is drawn (no ids, times or engine suffixes), so the picture is the same at every run and can be checked
 * against the committed file; {@code -Dcoop.docs.update=true} writes it instead.
 */
final class TreePicture {
    private static final int CHAR = 7; // width of a character of the 12 px monospace font, rounded up
    private static final int LINE = 17;
    private static final int PAD = 8;
    private static final int INDENT = 36;
    private static final int GAP = 12;

    private final StringBuilder body = new StringBuilder();
    private int y = GAP;
    private int width;

    private TreePicture() {
    }

    /** Asserts that {@code file} (from the repository root) is the picture of {@code tree}, or writes it. */
    static void check(Hierarchy tree, String file) throws IOException {
        Path path = repositoryRoot().resolve(file);
        String svg = svg(tree);
        if (Boolean.getBoolean("coop.docs.update")) {
            Files.writeString(path, svg, StandardCharsets.UTF_8);
        }
        assertThat(Files.exists(path) ? Files.readString(path, StandardCharsets.UTF_8) : "")
                .as(file + " is the demo's tree (run ScenariosTest with -Dcoop.docs.update=true to redraw it)")
                .isEqualTo(svg);
    }

    static String svg(Hierarchy tree) {
        TreePicture picture = new TreePicture();
        for (RunView root : tree.runs()) {
            picture.run(root, 0, tree.topic());
        }
        int height = picture.y;
        int w = picture.width + GAP;
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + height + "\" viewBox=\"0 0 "
                + w + " " + height + "\" font-family=\"ui-monospace, SFMono-Regular, Menlo, Consolas, monospace\""
                + " font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n" + picture.body
                + "</svg>\n";
    }

    /** Draws the run at the current height, then its children below it; returns the y of the run's header. */
    private int run(RunView run, int depth, String topic) {
        int x = GAP + depth * INDENT;
        List<String> lines = new ArrayList<>();
        List<StepView> steps = run.steps().stream().filter(s -> s.kind() == StepView.Kind.STEP).toList();
        Set<String> names = new LinkedHashSet<>();
        steps.forEach(s -> names.add(s.name()));
        for (String name : names) {
            Set<String> launched = new LinkedHashSet<>();
            for (StepView step : steps) {
                if (step.name().equals(name)) {
                    for (RunView child : run.children()) {
                        if (step.launched().contains(child.messageId())) {
                            launched.add(child.topic());
                        }
                    }
                }
            }
            lines.add("✓ " + name + (launched.isEmpty() ? "" : "  → " + String.join(", ", launched)));
        }
        String title = run.saga();
        String service = steps.isEmpty() ? "" : service(steps.getFirst().engine());
        String on = "on " + topic;
        int chars = Math.max(title.length() + 5 + service.length(), on.length());
        for (String line : lines) {
            chars = Math.max(chars, line.length());
        }
        int boxWidth = chars * CHAR + 2 * PAD;
        int boxHeight = (2 + lines.size()) * LINE + PAD;
        int top = y;
        body.append(String.format("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"6\" fill=\"#f3faf4\""
                + " stroke=\"#2e7d32\" stroke-width=\"1.5\"/>\n", x, top, boxWidth, boxHeight));
        int baseline = top + LINE;
        body.append(String.format("<text x=\"%d\" y=\"%d\"><tspan font-weight=\"bold\">%s</tspan>"
                + "<tspan fill=\"#555555\">  in %s</tspan></text>\n", x + PAD, baseline, xml(title), xml(service)));
        body.append(String.format("<text x=\"%d\" y=\"%d\" fill=\"#555555\">%s</text>\n", x + PAD, baseline + LINE,
                xml(on)));
        for (int i = 0; i < lines.size(); i++) {
            body.append(String.format("<text x=\"%d\" y=\"%d\">%s</text>\n", x + PAD, baseline + (2 + i) * LINE,
                    xml(lines.get(i))));
        }
        width = Math.max(width, x + boxWidth);
        y = top + boxHeight + GAP;
        int from = top + boxHeight;
        int spine = x + INDENT / 2;
        for (RunView child : ordered(run)) {
            int header = run(child, depth + 1, child.topic()) + LINE / 2 + 4;
            body.append(String.format("<path d=\"M%d %d V%d H%d\" fill=\"none\" stroke=\"#888888\""
                    + " stroke-width=\"1.5\"/>\n", spine, from, header, spine + INDENT / 2));
            from = header;
        }
        return top;
    }

    /** Children by the step that launched them, then by saga: the same order at every run of the demo. */
    private static List<RunView> ordered(RunView run) {
        List<StepView> steps = run.steps();
        Comparator<RunView> byStep = Comparator.comparingInt(child -> {
            for (int i = 0; i < steps.size(); i++) {
                if (steps.get(i).launched().contains(child.messageId())) {
                    return i;
                }
            }
            return steps.size();
        });
        return run.children().stream().sorted(byStep.thenComparing(RunView::saga)).toList();
    }

    /** The service of an engine: its name without the random suffix of its id ({@code accounts-8679c99e}). */
    private static String service(String engine) {
        int dash = engine == null ? -1 : engine.lastIndexOf('-');
        return dash < 0 ? String.valueOf(engine) : engine.substring(0, dash);
    }

    private static String xml(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }

    private static Path repositoryRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !(Files.exists(dir.resolve("README.md")) && Files.isDirectory(dir.resolve("docs")))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("No README.md and docs/ above " + Path.of("").toAbsolutePath());
        }
        return dir;
    }
}
