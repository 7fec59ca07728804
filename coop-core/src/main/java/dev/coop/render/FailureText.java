package dev.coop.render;

import dev.coop.failure.Failure;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** Failures as text: one line under the step or run, distributed stack traces, and the compensations that ran. */
final class FailureText {
    /** Failures that say why a run rolled back although nothing in it failed. */
    private static final Set<String> REQUESTS = Set.of("dev.coop.failure.ParentSaidSoException",
            "dev.coop.failure.RollbackRequestedException");

    private final RenderOptions options;
    private final TextStyle style;

    FailureText(RenderOptions options, TextStyle style) {
        this.options = options;
        this.style = style;
    }

    /** After a tree: its distributed stack trace, if anything failed, and the compensations that ran. */
    void epilogue(StringBuilder out, List<RunView> roots) {
        List<RunView> failed = roots.stream().filter(r -> r.failure() != null).toList();
        if (!failed.isEmpty()) {
            out.append('\n').append(style.bold("Distributed stack trace")).append('\n');
            for (RunView r : failed) {
                chain(out, r.failure(), "  ", true, new HashSet<>());
            }
        }
        List<RunView> all = roots.stream().flatMap(r -> r.flatten().stream()).toList();
        boolean compensated = all.stream().flatMap(r -> r.steps().stream())
                .anyMatch(s -> s.kind() == StepView.Kind.COMPENSATION);
        if (!compensated && failed.isEmpty()) {
            return;
        }
        compensations(out, all);
    }

    /** The compensations of the tree, in the order they ran. */
    private void compensations(StringBuilder out, List<RunView> all) {
        record Done(RunView run, StepView step) {
        }
        List<Done> compensations = new ArrayList<>();
        for (RunView r : all) {
            for (StepView s : r.steps()) {
                if (s.kind() == StepView.Kind.COMPENSATION) {
                    compensations.add(new Done(r, s));
                }
            }
        }
        compensations.sort(Comparator.comparing((Done d) -> d.step().endedAt(),
                Comparator.nullsLast(Comparator.naturalOrder())));
        out.append('\n').append(style.bold("Compensations, in the order they ran")).append('\n');
        if (compensations.isEmpty()) {
            out.append("  ").append(style.dim("none: nothing had to be undone")).append('\n');
        }
        for (int i = 0; i < compensations.size(); i++) {
            Done d = compensations.get(i);
            out.append("  ").append(i + 1).append(". ").append(d.run().saga()).append(": ")
                    .append(TextFormat.strip(d.step().name(), TreeLabels.ROLLBACK_PREFIX, ""));
            if (d.step().engine() != null) {
                out.append("  ").append(style.dim(d.step().engine()));
            }
            if (d.step().failure() != null) {
                out.append("  ").append(failureLine(d.step().failure()));
            }
            out.append('\n');
        }
    }

    /** One failure and its causes; a failure met again further down is named, not repeated. */
    void chain(StringBuilder out, Failure f, String indent, boolean first, Set<Failure> shown) {
        out.append(indent).append(first ? "" : style.dim("caused by "))
                .append(style.red(TextFormat.shortType(f.type()) + ": "
                        + TextFormat.firstLine(f.message())));
        if (f.source() != null) {
            out.append(style.dim("  (in " + f.source() + ")"));
        }
        if (!shown.add(f)) {
            out.append(style.dim("  (as above)")).append('\n');
            return;
        }
        out.append('\n');
        if (options.frames()) {
            String full = f.type();
            if (!full.equals(TextFormat.shortType(full))) {
                out.append(indent).append("    ").append(style.dim("type " + full)).append('\n');
            }
            for (Failure.Frame frame : f.stackTrace()) {
                out.append(indent).append("    ").append(style.dim("at " + TextFormat.frame(frame))).append('\n');
            }
        }
        for (Failure cause : f.causes()) {
            chain(out, cause, indent + "  ", false, shown);
        }
    }

    String failureLine(Failure f) {
        String text = TextFormat.shortType(f.type()) + ": " + TextFormat.firstLine(f.message());
        return (REQUESTS.contains(f.type())
                ? style.yellow(style.glyphs().undo() + " " + text)
                : style.red(style.glyphs().fail() + " " + text))
                + (f.source() == null ? "" : style.dim("  (in " + f.source() + ")"));
    }
}
