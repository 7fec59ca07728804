package dev.coop.render;

import dev.coop.failure.Failure;
import dev.coop.inspect.Event;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.RunView;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * Draws cooperation trees, event logs and run listings as text. A tree shows every run with its saga, status and duration; under it its steps (name, kind,
 * engine, duration, how many messages they launched) and, under each step, the runs it caused. Failures are shown
 * where they happened, in one line each (type, message, source); a failed hierarchy ends with its distributed stack
 * trace (which run in which service failed, why) and the compensations that ran, in order. Thread-safe.
 *
 * <pre>{@code
 * System.out.print(Renderers.forTerminal().render(client.tree(messageId)));
 * }</pre>
 */
public final class TextRenderer {
    private final RenderOptions options;
    private final TextStyle style;
    private final TreeText tree;
    private final FailureText failures;

    public TextRenderer(RenderOptions options) {
        this.options = Objects.requireNonNull(options, "options");
        this.style = new TextStyle(options);
        this.failures = new FailureText(options, style);
        this.tree = new TreeText(style, new TreeLabels(options, style), failures);
    }

    public RenderOptions options() {
        return options;
    }

    /** The tree below a message, then (if anything failed) its distributed stack trace and compensations. */
    public String render(Hierarchy hierarchy) {
        Objects.requireNonNull(hierarchy, "hierarchy");
        StringBuilder out = new StringBuilder();
        out.append(style.glyphs().bullet()).append(' ').append(style.bold(hierarchy.topic())).append("  message ")
                .append(hierarchy.messageId()).append("  launched ").append(TextFormat.time(hierarchy.launchedAt()));
        String outcome = TextFormat.outcome(hierarchy.runs(), hierarchy.finished());
        out.append("  ").append(style.colorStatus(outcome));
        if (hierarchy.finished() && !hierarchy.runs().isEmpty()) {
            OffsetDateTime end = hierarchy.runs().stream().flatMap(r -> r.flatten().stream())
                    .map(RunView::finishedAt).filter(Objects::nonNull).max(Comparator.naturalOrder())
                    .orElse(null);
            String took = TextFormat.duration(hierarchy.launchedAt(), end);
            if (took != null) {
                out.append(" in ").append(took);
            }
        }
        out.append('\n');
        List<RunView> runs = hierarchy.runs();
        if (runs.isEmpty()) {
            out.append(style.glyphs().last())
                    .append(style.dim("no saga was registered for the topic when it was launched"))
                    .append('\n');
        }
        for (int i = 0; i < runs.size(); i++) {
            tree.run(out, runs.get(i), "", i == runs.size() - 1);
        }
        failures.epilogue(out, runs);
        return safe(out.toString());
    }

    /** The tree below one run, then (if anything failed) its distributed stack trace and compensations. */
    public String render(RunView run) {
        Objects.requireNonNull(run, "run");
        StringBuilder out = new StringBuilder();
        out.append(style.glyphs().bullet()).append(' ').append("run ").append(run.runId()).append("  message ")
                .append(run.messageId()).append('\n');
        tree.run(out, run, "", true);
        failures.epilogue(out, List.of(run));
        return safe(out.toString());
    }

    /**
     * A failure as a distributed stack trace: each failure with its source, its causes indented below it; frames only
     * if the options say so.
     */
    public String render(Failure failure) {
        StringBuilder out = new StringBuilder();
        failures.chain(out, failure, "", true, new HashSet<>());
        return safe(out.toString());
    }

    /**
     * An event log as a table, one event a line: its id, the time since the first event, type, saga, step, engine,
     * depth in the tree, and for events with an exception its type and message.
     */
    public String renderEvents(List<Event> events) {
        Objects.requireNonNull(events, "events");
        OffsetDateTime first = events.isEmpty() ? null : events.getFirst().createdAt();
        List<List<String>> rows = new ArrayList<>();
        rows.add(List.of("ID", "AT", "TYPE", "SAGA", "STEP", "ENGINE", "DEPTH", "EXCEPTION"));
        for (Event e : events) {
            String exception = "";
            if (e.exception() != null) {
                try {
                    Failure f = Failure.fromJson(e.exception());
                    exception = TextFormat.shortType(f.type()) + ": " + TextFormat.firstLine(f.message());
                } catch (RuntimeException notAFailure) {
                    exception = TextFormat.firstLine(e.exception());
                }
            }
            String step = e.attempt() == null
                    ? TextFormat.orDash(e.step())
                    : TextFormat.orDash(e.step()) + " (attempt " + e.attempt() + ")";
            rows.add(List.of(String.valueOf(e.id()), "+" + TextFormat.duration(first, e.createdAt()), e.type().name(),
                    TextFormat.orDash(e.saga()), step, TextFormat.orDash(e.engine()),
                    String.valueOf(e.lineage().depth()), exception));
        }
        return table(rows, 2, style::colorEvent);
    }

    /**
     * A run listing as a table: created, status ({@code RUNNING} while an engine executes a step of a runnable
     * run), saga, topic, run id, message id, failure message.
     */
    public String renderRuns(List<RunSummary> runs) {
        Objects.requireNonNull(runs, "runs");
        List<List<String>> rows = new ArrayList<>();
        rows.add(List.of("CREATED", "STATUS", "SAGA", "TOPIC", "RUN", "MESSAGE", "FAILURE"));
        for (RunSummary r : runs) {
            rows.add(List.of(TextFormat.time(r.createdAt()), r.running() != null ? "RUNNING" : r.status().name(),
                    TextFormat.sagaName(r.saga(), r.sagaVersion()), r.topic(),
                    r.runId().toString(),
                    r.messageId().toString(),
                    r.failureMessage() == null ? "" : TextFormat.firstLine(r.failureMessage())));
        }
        return table(rows, 1, style::colorStatus);
    }

    /** Parked runs as a table: since when, saga, step index, attempt, run id, message id, why. */
    public String renderParked(List<ParkedRun> parked) {
        Objects.requireNonNull(parked, "parked");
        List<List<String>> rows = new ArrayList<>();
        rows.add(List.of("SINCE", "SAGA", "STEP", "ATTEMPT", "RUN", "MESSAGE", "FAILURE"));
        for (ParkedRun p : parked) {
            rows.add(List.of(TextFormat.time(p.createdAt()), p.saga(),
                    p.step() != null ? p.step() : String.valueOf(p.stepIndex()),
                    String.valueOf(p.attempt()), p.runId().toString(), p.messageId().toString(),
                    p.failure() == null
                            ? ""
                            : TextFormat.shortType(p.failure().type()) + ": "
                                    + TextFormat.firstLine(p.failure().message())));
        }
        return table(rows, 1, style::colorStatus);
    }

    /** Left-aligned columns separated by two spaces; the header row bold; colours on the status column. */
    private String table(List<List<String>> raw, int statusColumn, UnaryOperator<String> color) {
        List<List<String>> rows = raw.stream().map(row -> row.stream().map(TerminalText::escape).toList()).toList();
        int columns = rows.getFirst().size();
        int[] width = new int[columns];
        for (List<String> row : rows) {
            for (int i = 0; i < columns; i++) {
                width[i] = Math.max(width[i], row.get(i).length());
            }
        }
        StringBuilder out = new StringBuilder();
        for (int r = 0; r < rows.size(); r++) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < columns; i++) {
                String cell = rows.get(r).get(i);
                String padded = i == columns - 1 ? cell : cell + " ".repeat(width[i] - cell.length() + 2);
                if (r == 0) {
                    padded = style.bold(padded);
                } else if (i == statusColumn) {
                    padded = color.apply(cell) + padded.substring(cell.length());
                }
                line.append(padded);
            }
            out.append(line.toString().stripTrailing()).append('\n');
        }
        return out.toString();
    }

    /** The rendered text with user-provided control characters escaped; only this renderer's colours kept. */
    private String safe(String rendered) {
        return TerminalText.escape(rendered, true, options.colors());
    }
}
