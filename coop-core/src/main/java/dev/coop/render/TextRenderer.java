package dev.coop.render;

import dev.coop.failure.ChildRollbackFailedException;
import dev.coop.failure.ChildRolledBackException;
import dev.coop.failure.GaveUpException;
import dev.coop.failure.ParentSaidSoException;
import dev.coop.failure.RollbackRequestedException;

import dev.coop.inspect.Event;
import dev.coop.failure.Failure;
import dev.coop.inspect.Hierarchy;
import dev.coop.MessageId;
import dev.coop.inspect.ParkedRun;
import dev.coop.RunStatus;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.CollapsedRuns;
import dev.coop.inspect.RunView;
import dev.coop.inspect.RunningStep;
import dev.coop.inspect.StepView;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
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
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS 'UTC'",
            Locale.ROOT);
    private static final String ROLLBACK_PREFIX = "Rollback of ";
    private static final int MAX_UNHANDLED_SHOWN = 5;
    /** A step that caused more runs than this is shown as counts per saga, plus its runs that did not commit. */
    private static final int COLLAPSE_OVER = 50;
    private static final int MAX_EXCEPTIONS_SHOWN = 10;
    private static final String CHILDREN_SUFFIX = " (rolling back child scopes)";
    private static final String HANDLER_SUFFIX = " (child failure handler)";
    private static final String GAVE_UP = "dev.coop.failure.GaveUpException";
    private static final Set<String> CHILD_FAILURES = Set.of("dev.coop.failure.ChildRolledBackException",
            "dev.coop.failure.ChildRollbackFailedException");
    /** Failures that say why a run rolled back although nothing in it failed. */
    private static final Set<String> REQUESTS = Set.of("dev.coop.failure.ParentSaidSoException",
            "dev.coop.failure.RollbackRequestedException");

    private final RenderOptions options;
    private final Glyphs glyphs;

    public TextRenderer(RenderOptions options) {
        this.options = Objects.requireNonNull(options, "options");
        this.glyphs = options.unicode() ? Glyphs.UNICODE : Glyphs.ASCII;
    }

    public RenderOptions options() {
        return options;
    }

    /** The tree below a message, then (if anything failed) its distributed stack trace and compensations. */
    public String render(Hierarchy hierarchy) {
        Objects.requireNonNull(hierarchy, "hierarchy");
        StringBuilder out = new StringBuilder();
        out.append(glyphs.bullet).append(' ').append(bold(hierarchy.topic())).append("  message ")
                .append(hierarchy.messageId()).append("  launched ").append(time(hierarchy.launchedAt()));
        String outcome = outcome(hierarchy.runs(), hierarchy.finished());
        out.append("  ").append(colorStatus(outcome));
        if (hierarchy.finished() && !hierarchy.runs().isEmpty()) {
            OffsetDateTime end = hierarchy.runs().stream().flatMap(r -> r.flatten().stream())
                    .map(RunView::finishedAt).filter(Objects::nonNull).max(Comparator.naturalOrder())
                    .orElse(null);
            String took = duration(hierarchy.launchedAt(), end);
            if (took != null) {
                out.append(" in ").append(took);
            }
        }
        out.append('\n');
        List<RunView> runs = hierarchy.runs();
        if (runs.isEmpty()) {
            out.append(glyphs.last).append(dim("no saga was registered for the topic when it was launched"))
                    .append('\n');
        }
        for (int i = 0; i < runs.size(); i++) {
            run(out, runs.get(i), "", i == runs.size() - 1);
        }
        epilogue(out, runs);
        return safe(out.toString());
    }

    /** The tree below one run, then (if anything failed) its distributed stack trace and compensations. */
    public String render(RunView run) {
        Objects.requireNonNull(run, "run");
        StringBuilder out = new StringBuilder();
        out.append(glyphs.bullet).append(' ').append("run ").append(run.runId()).append("  message ")
                .append(run.messageId()).append('\n');
        run(out, run, "", true);
        epilogue(out, List.of(run));
        return safe(out.toString());
    }

    /**
     * A failure as a distributed stack trace: each failure with its source, its causes indented below it; frames only
     * if the options say so.
     */
    public String render(Failure failure) {
        StringBuilder out = new StringBuilder();
        chain(out, failure, "", true, new HashSet<>());
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
                    exception = shortType(f.type()) + ": " + firstLine(f.message());
                } catch (RuntimeException notAFailure) {
                    exception = firstLine(e.exception());
                }
            }
            String step = e.attempt() == null ? orDash(e.step()) : orDash(e.step()) + " (attempt " + e.attempt() + ")";
            rows.add(List.of(String.valueOf(e.id()), "+" + duration(first, e.createdAt()), e.type().name(),
                    orDash(e.saga()), step, orDash(e.engine()), String.valueOf(e.lineage().depth()), exception));
        }
        return table(rows, 2, this::colorEvent);
    }

    /** A run listing as a table: created, status, saga, topic, run id, message id, failure message. */
    public String renderRuns(List<RunSummary> runs) {
        Objects.requireNonNull(runs, "runs");
        List<List<String>> rows = new ArrayList<>();
        rows.add(List.of("CREATED", "STATUS", "SAGA", "TOPIC", "RUN", "MESSAGE", "FAILURE"));
        for (RunSummary r : runs) {
            rows.add(List.of(time(r.createdAt()), r.status().name(), sagaName(r.saga(), r.sagaVersion()), r.topic(),
                    r.runId().toString(),
                    r.messageId().toString(), r.failureMessage() == null ? "" : firstLine(r.failureMessage())));
        }
        return table(rows, 1, this::colorStatus);
    }

    /** Parked runs as a table: since when, saga, step index, attempt, run id, message id, why. */
    public String renderParked(List<ParkedRun> parked) {
        Objects.requireNonNull(parked, "parked");
        List<List<String>> rows = new ArrayList<>();
        rows.add(List.of("SINCE", "SAGA", "STEP", "ATTEMPT", "RUN", "MESSAGE", "FAILURE"));
        for (ParkedRun p : parked) {
            rows.add(List.of(time(p.createdAt()), p.saga(), p.step() != null ? p.step() : String.valueOf(p.stepIndex()),
                    String.valueOf(p.attempt()), p.runId().toString(), p.messageId().toString(),
                    p.failure() == null
                            ? ""
                            : shortType(p.failure().type()) + ": " + firstLine(p.failure().message())));
        }
        return table(rows, 1, this::colorStatus);
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
                    padded = bold(padded);
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

    private static String orDash(String s) {
        return s == null ? "-" : s;
    }

    /**
     * Of the failed attempts listed, how many attempts before each the log counted without keeping (a step retried
     * many times keeps its first attempts and the latest), by identity.
     */
    private static Map<StepView, Integer> omittedAttempts(List<StepView> steps) {
        Map<StepView, Integer> omittedAttempts = new java.util.IdentityHashMap<>();
        Map<String, Integer> previous = new HashMap<>();
        for (StepView s : steps) {
            if (s.kind() == StepView.Kind.ATTEMPT_FAILED) {
                int before = previous.getOrDefault(s.name(), 0);
                omittedAttempts.put(s, s.attempt() - before - 1);
                previous.put(s.name(), s.attempt());
            } else if (s.kind() == StepView.Kind.STEP || s.kind() == StepView.Kind.RETRIED) {
                previous.remove(s.name()); // a new series of attempts starts at 1
            }
        }
        return omittedAttempts;
    }

    private void run(StringBuilder out, RunView run, String indent, boolean last) {
        Map<StepView, Integer> omitted = omittedAttempts(run.steps());
        out.append(indent).append(last ? glyphs.last : glyphs.branch).append(runLabel(run)).append('\n');
        String inner = indent + (last ? glyphs.space : glyphs.pipe);
        List<StepView> steps = run.steps();
        Map<MessageId, List<RunView>> byMessage = new LinkedHashMap<>();
        for (RunView child : run.children()) {
            byMessage.computeIfAbsent(child.messageId(), k -> new ArrayList<>()).add(child);
        }
        boolean failureShown = run.failure() == null
                || steps.stream().anyMatch(s -> run.failure().equals(s.failure()));
        List<Object> items = new ArrayList<>();
        Map<StepView, List<RunView>> caused = new LinkedHashMap<>();
        Map<StepView, List<MessageId>> unhandled = new HashMap<>();
        Set<MessageId> placed = new HashSet<>();
        for (StepView step : steps) {
            List<RunView> kids = new ArrayList<>();
            for (MessageId m : step.launched()) {
                if (placed.add(m)) {
                    List<RunView> handlers = byMessage.get(m);
                    if (handlers == null) {
                        unhandled.computeIfAbsent(step, k -> new ArrayList<>()).add(m);
                    } else {
                        kids.addAll(handlers);
                    }
                }
            }
            caused.put(step, kids);
            items.add(step);
        }
        for (RunView child : run.children()) {
            if (!placed.contains(child.messageId())) {
                items.add(child);
            }
        }
        if (run.running() != null) { // after the steps it ran: it caused nothing yet
            items.add(steps.size(), run.running());
        }
        items.addAll(collapsedLines(run));
        if (!failureShown) {
            out.append(inner).append(items.isEmpty() ? glyphs.space : glyphs.pipe).append(failureLine(run.failure()))
                    .append('\n');
        }
        for (int i = 0; i < items.size(); i++) {
            boolean lastItem = i == items.size() - 1;
            if (items.get(i) instanceof StepView step) {
                step(out, step, caused.get(step), unhandled.getOrDefault(step, List.of()), inner, lastItem,
                        omitted.getOrDefault(step, 0));
            } else if (items.get(i) instanceof RunningStep running) {
                out.append(inner).append(lastItem ? glyphs.last : glyphs.branch).append(runningLabel(running))
                        .append('\n');
            } else if (items.get(i) instanceof String line) {
                out.append(inner).append(lastItem ? glyphs.last : glyphs.branch).append(dim(line)).append('\n');
            } else {
                run(out, (RunView) items.get(i), inner, lastItem);
            }
        }
    }

    /**
     * A run whose children the read counted instead of listing (a large fan-out): one line per saga with its runs per
     * status, and what is listed (the runs that did not commit, under the steps that caused them).
     */
    private static List<String> collapsedLines(RunView run) {
        if (run.collapsed().isEmpty()) {
            return List.of();
        }
        List<String> lines = new ArrayList<>();
        long notCommitted = 0;
        for (CollapsedRuns group : run.collapsed()) {
            lines.add(group.total() + (group.total() == 1 ? " run of " : " runs of ") + group.saga() + ": "
                    + String.join(", ", group.byStatus().entrySet().stream().sorted(Map.Entry.comparingByKey())
                            .map(e -> e.getValue() + " " + e.getKey().name().toLowerCase(Locale.ROOT).replace('_', ' '))
                            .toList()));
            notCommitted += group.total() - group.count(RunStatus.COMMITTED);
        }
        long listed = run.children().size();
        lines.add(notCommitted == 0
                ? "(counted, not listed: every one committed)"
                : listed < notCommitted
                        ? "(counted, not listed: showing " + listed + " of the " + notCommitted
                                + " runs that did not commit)"
                        : "(counted, not listed: the runs that did not commit are shown)");
        return lines;
    }

    private void step(StringBuilder out, StepView step, List<RunView> caused, List<MessageId> unhandled,
            String indent, boolean last, int omittedAttempts) {
        out.append(indent).append(last ? glyphs.last : glyphs.branch).append(stepLabel(step, omittedAttempts))
                .append('\n');
        String inner = indent + (last ? glyphs.space : glyphs.pipe);
        for (int i = 0; i < Math.min(unhandled.size(), MAX_UNHANDLED_SHOWN); i++) {
            out.append(inner).append(caused.isEmpty() ? "  " : glyphs.pipe.substring(0, 2))
                    .append(yellow("UNHANDLED: no saga was registered for the topic of message " + unhandled.get(i)
                            + " when it was launched"))
                    .append('\n');
        }
        if (unhandled.size() > MAX_UNHANDLED_SHOWN) {
            out.append(inner).append(caused.isEmpty() ? "  " : glyphs.pipe.substring(0, 2))
                    .append(yellow("UNHANDLED: " + (unhandled.size() - MAX_UNHANDLED_SHOWN) + " more messages"))
                    .append('\n');
        }
        if (step.failure() != null) {
            // under the step's name; the pipe continues to the runs the step caused
            out.append(inner).append(caused.isEmpty() ? "  " : glyphs.pipe.substring(0, 2))
                    .append(failureLine(step.failure())).append('\n');
        }
        List<RunView> shown = caused;
        if (caused.size() > COLLAPSE_OVER) { // a fan-out: one line per saga, then only the runs that did not commit
            Map<String, Map<String, Integer>> bySaga = new LinkedHashMap<>();
            for (RunView r : caused) {
                bySaga.computeIfAbsent(r.saga(), k -> new java.util.TreeMap<>()).merge(r.status().name(), 1,
                        Integer::sum);
            }
            shown = caused.stream().filter(r -> r.status() != dev.coop.RunStatus.COMMITTED).limit(MAX_EXCEPTIONS_SHOWN)
                    .toList();
            long notCommitted = caused.stream().filter(r -> r.status() != dev.coop.RunStatus.COMMITTED).count();
            List<String> lines = new ArrayList<>();
            bySaga.forEach((saga, statuses) -> lines.add(statuses.values().stream().mapToInt(Integer::intValue).sum()
                    + " runs of " + saga + ": " + String.join(", ", statuses.entrySet().stream()
                            .map(e -> e.getValue() + " " + e.getKey().toLowerCase(java.util.Locale.ROOT)
                                    .replace('_', ' '))
                            .toList())));
            if (notCommitted > shown.size()) {
                lines.add("(showing " + shown.size() + " of the " + notCommitted + " runs that did not commit)");
            }
            for (int i = 0; i < lines.size(); i++) {
                boolean lastLine = shown.isEmpty() && i == lines.size() - 1;
                out.append(inner).append(lastLine ? glyphs.last : glyphs.branch).append(dim(lines.get(i)))
                        .append('\n');
            }
        }
        for (int i = 0; i < shown.size(); i++) {
            run(out, shown.get(i), inner, i == shown.size() - 1);
        }
    }

    /** A saga's name, with its version when it has versions ({@code billing v2}); version 1 is the name alone. */
    static String sagaName(String saga, int version) {
        return version == 1 ? saga : saga + " v" + version;
    }

    private String runLabel(RunView run) {
        StringBuilder s = new StringBuilder();
        if (dev.coop.ExternalTask.SAGA.equals(run.saga())) { // a task waits for the outside world, not a saga
            s.append(bold("external task " + run.topic())).append("  ");
        } else {
            s.append(bold(sagaName(run.saga(), run.sagaVersion()))).append(dim(" on " + run.topic())).append("  ");
        }
        String status = run.running() != null ? "RUNNING" : run.status().name();
        if (!run.status().isFinished() && run.rollingBack()) {
            status += " (rolling back)";
        }
        s.append(colorStatus(status));
        if (run.waitingFor() != null) {
            s.append(dim(" (" + run.waitingFor() + ")"));
        }
        s.append(ordering(run.ordering(), run.status()));
        String took = duration(runStart(run), run.finishedAt());
        if (took != null) {
            s.append("  ").append(dim(took));
        }
        if (options.ids()) {
            s.append(dim("  run " + run.runId()));
        }
        return s.toString();
    }

    /**
     * What a run's launch options say about its turn: its priority (when set), its ordering key, and for a held run
     * why it is not running: the run of its key ahead of it.
     */
    private String ordering(dev.coop.inspect.RunOrdering o, dev.coop.RunStatus status) {
        StringBuilder s = new StringBuilder();
        if (status == dev.coop.RunStatus.HELD && o.orderingKey() != null) {
            s.append(dim(" (held behind key '" + o.orderingKey() + "'"
                    + (o.heldBehind() == null ? "" : ": run " + o.heldBehind() + " ahead") + ")"));
        } else if (o.orderingKey() != null) {
            s.append(dim("  key '" + o.orderingKey() + "'"));
        }
        if (o.priority() != 0) {
            s.append(dim("  priority " + o.priority()));
        }
        return s.toString();
    }

    /** The step an engine executes now: name, engine, since when, attempt, last sign of life. */
    private String runningLabel(RunningStep r) {
        StringBuilder s = new StringBuilder();
        s.append(yellow(glyphs.running)).append(' ').append(r.step()).append("  running");
        if (r.engine() != null) {
            s.append("  ").append(dim(r.engine()));
        }
        s.append("  since ").append(time(r.since()));
        s.append("  attempt ").append(r.attempt());
        if (r.lastActivity() != null) {
            s.append(dim("  last activity " + time(r.lastActivity())));
        }
        return s.toString();
    }

    private String stepLabel(StepView step, int omitted) {
        String name = step.name();
        String kind;
        String marker;
        switch (step.kind()) {
            case CHILD_FAILURE_HANDLER -> {
                name = strip(name, "", HANDLER_SUFFIX);
                kind = "child-failure handler";
                marker = glyphs.handler;
            }
            case ROLLBACK_CHILDREN -> {
                name = strip(name, ROLLBACK_PREFIX, CHILDREN_SUFFIX);
                kind = "rollback of children";
                marker = glyphs.undo;
            }
            case COMPENSATION -> {
                name = strip(name, ROLLBACK_PREFIX, "");
                kind = "compensation";
                marker = glyphs.undo;
            }
            case ATTEMPT_FAILED -> {
                kind = "attempt " + step.attempt() + " failed, retried";
                marker = glyphs.fail;
            }
            case PARKED -> {
                kind = "parked after attempt " + step.attempt();
                marker = glyphs.parked;
            }
            case RETRIED -> {
                kind = "retried by an operator";
                marker = glyphs.handler;
            }
            case MARKED_DONE -> {
                kind = "marked done by an operator (not run)";
                marker = glyphs.handler;
            }
            default -> {
                kind = "step";
                marker = glyphs.ok;
                if (step.failure() != null && GAVE_UP.equals(step.failure().type())) {
                    kind = "gave up";
                } else if (step.failure() != null && CHILD_FAILURES.contains(step.failure().type())) {
                    kind = "children failed";
                }
            }
        }
        if (step.kind() == StepView.Kind.PARKED) {
            marker = ansi("35", marker);
        } else if (step.failure() != null) {
            marker = red(glyphs.fail);
        } else if (step.kind() == StepView.Kind.STEP) {
            marker = green(marker);
        } else {
            marker = yellow(marker);
        }
        StringBuilder s = new StringBuilder();
        s.append(marker).append(' ').append(name);
        if (step.iteration() > 1) {
            s.append(" #").append(step.iteration());
        }
        s.append("  ").append(kind);
        if (omitted > 0) {
            s.append(dim(" (" + omitted + (omitted == 1 ? " earlier attempt" : " earlier attempts")
                    + " counted, not kept)"));
        }
        if (step.engine() != null) {
            s.append("  ").append(dim(step.engine()));
        }
        String took = duration(step.startedAt(), step.endedAt());
        if (took != null) {
            s.append("  ").append(dim(took));
        }
        int n = step.launchedCount();
        if (n > 0) {
            s.append("  ").append(step.kind() == StepView.Kind.ROLLBACK_CHILDREN
                    ? "rolled back " + n + (n == 1 ? " message" : " messages")
                    : "launched " + n);
        }
        return s.toString();
    }

    /**
     * When a run started: its first step's transaction, or (if the log does not say) when the run row says it
     * started, or was created.
     */
    static OffsetDateTime runStart(RunView run) {
        OffsetDateTime start = run.startedAt() != null ? run.startedAt() : run.createdAt();
        for (StepView s : run.steps()) {
            if (s.startedAt() != null && (start == null || s.startedAt().isBefore(start))) {
                start = s.startedAt();
            }
        }
        return start;
    }

    private static String strip(String name, String prefix, String suffix) {
        String s = name;
        if (!prefix.isEmpty() && s.startsWith(prefix)) {
            s = s.substring(prefix.length());
        }
        if (!suffix.isEmpty() && s.endsWith(suffix)) {
            s = s.substring(0, s.length() - suffix.length());
        }
        return s;
    }

    private String failureLine(Failure f) {
        String text = shortType(f.type()) + ": " + firstLine(f.message());
        return (REQUESTS.contains(f.type()) ? yellow(glyphs.undo + " " + text) : red(glyphs.fail + " " + text))
                + (f.source() == null ? "" : dim("  (in " + f.source() + ")"));
    }

    private void epilogue(StringBuilder out, List<RunView> roots) {
        List<RunView> failed = roots.stream().filter(r -> r.failure() != null).toList();
        if (!failed.isEmpty()) {
            out.append('\n').append(bold("Distributed stack trace")).append('\n');
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
        out.append('\n').append(bold("Compensations, in the order they ran")).append('\n');
        if (compensations.isEmpty()) {
            out.append("  ").append(dim("none: nothing had to be undone")).append('\n');
        }
        for (int i = 0; i < compensations.size(); i++) {
            Done d = compensations.get(i);
            out.append("  ").append(i + 1).append(". ").append(d.run().saga()).append(": ")
                    .append(strip(d.step().name(), ROLLBACK_PREFIX, ""));
            if (d.step().engine() != null) {
                out.append("  ").append(dim(d.step().engine()));
            }
            if (d.step().failure() != null) {
                out.append("  ").append(failureLine(d.step().failure()));
            }
            out.append('\n');
        }
    }

    /** One failure and its causes; a failure met again further down is named, not repeated. */
    private void chain(StringBuilder out, Failure f, String indent, boolean first, Set<Failure> shown) {
        out.append(indent).append(first ? "" : dim("caused by ")).append(red(shortType(f.type()) + ": "
                + firstLine(f.message())));
        if (f.source() != null) {
            out.append(dim("  (in " + f.source() + ")"));
        }
        if (!shown.add(f)) {
            out.append(dim("  (as above)")).append('\n');
            return;
        }
        out.append('\n');
        if (options.frames()) {
            String full = f.type();
            if (!full.equals(shortType(full))) {
                out.append(indent).append("    ").append(dim("type " + full)).append('\n');
            }
            for (Failure.Frame frame : f.stackTrace()) {
                out.append(indent).append("    ").append(dim("at " + frame(frame))).append('\n');
            }
        }
        for (Failure cause : f.causes()) {
            chain(out, cause, indent + "  ", false, shown);
        }
    }

    private static String frame(Failure.Frame f) {
        StringBuilder s = new StringBuilder();
        if (f.className() != null) {
            s.append(f.className()).append('.');
        }
        s.append(f.functionName() == null ? "?" : f.functionName()).append('(')
                .append(f.fileName() == null ? "?" : f.fileName());
        if (f.lineNumber() != null && f.lineNumber() >= 0) {
            s.append(':').append(f.lineNumber());
        }
        return s.append(')').toString();
    }

    /** The overall state of a hierarchy's root runs, as its outcome would read. */
    static String outcome(List<RunView> runs, boolean finished) {
        if (runs.isEmpty()) {
            return "UNHANDLED";
        }
        if (!finished) {
            return "RUNNING";
        }
        if (runs.stream().anyMatch(r -> r.status() == RunStatus.ROLLBACK_FAILED)) {
            return "ROLLBACK_FAILED";
        }
        return runs.stream().anyMatch(r -> r.status() == RunStatus.ROLLED_BACK) ? "ROLLED_BACK" : "COMMITTED";
    }

    /** The last part of a dotted (class) name; other type names unchanged. */
    static String shortType(String type) {
        int dot = type.lastIndexOf('.');
        return dot < 0 || dot == type.length() - 1 ? type : type.substring(dot + 1);
    }

    private static String firstLine(String message) {
        int nl = message.indexOf('\n');
        return nl < 0 ? message : message.substring(0, nl).stripTrailing() + " ...";
    }

    static String time(OffsetDateTime t) {
        return t == null ? "?" : TIME.format(t.withOffsetSameInstant(ZoneOffset.UTC));
    }

    /** {@code 12 ms}, {@code 1.25 s}, {@code 2 m 03 s}, {@code 1 h 05 m}; null when a bound is missing. */
    static String duration(OffsetDateTime from, OffsetDateTime to) {
        if (from == null || to == null) {
            return null;
        }
        return duration(Duration.between(from, to));
    }

    static String duration(Duration d) {
        long ms = Math.max(0, d.toMillis());
        if (ms < 1_000) {
            return ms + " ms";
        }
        if (ms < 60_000) {
            return String.format(Locale.ROOT, "%.2f s", ms / 1000.0);
        }
        long s = ms / 1000;
        if (s < 3600) {
            return String.format(Locale.ROOT, "%d m %02d s", s / 60, s % 60);
        }
        return String.format(Locale.ROOT, "%d h %02d m", s / 3600, (s % 3600) / 60);
    }

    private String colorEvent(String type) {
        return switch (type) {
            case "COMMITTED" -> green(type);
            case "ROLLING_BACK", "ROLLED_BACK", "ROLLBACK_EMITTED" -> red(type);
            case "ROLLBACK_FAILED" -> ansi("1;31", type);
            case "CANCELLATION_REQUESTED", "ATTEMPT_FAILED", "RETRIED", "MARKED_DONE" -> yellow(type);
            case "PARKED" -> ansi("35", type);
            default -> type;
        };
    }

    private String colorStatus(String status) {
        if (status.startsWith("COMMITTED")) {
            return green(status);
        }
        if (status.startsWith("ROLLBACK_FAILED")) {
            return ansi("1;31", status);
        }
        if (status.startsWith("ROLLED_BACK")) {
            return red(status);
        }
        if (status.startsWith("PARKED")) {
            return ansi("35", status);
        }
        return yellow(status);
    }

    private String bold(String s) {
        return ansi("1", s);
    }

    private String dim(String s) {
        return ansi("2", s);
    }

    private String red(String s) {
        return ansi("31", s);
    }

    private String green(String s) {
        return ansi("32", s);
    }

    private String yellow(String s) {
        return ansi("33", s);
    }

    private String ansi(String code, String s) {
        return options.colors() ? "\u001b[" + code + "m" + s + "\u001b[0m" : s;
    }

    private record Glyphs(String branch, String last, String pipe, String space, String ok, String fail,
            String undo, String handler, String bullet, String running, String parked) {
        static final Glyphs UNICODE = new Glyphs("├─ ", "└─ ", "│  ", "   ", "✓", "✗", "↺", "↪", "●", "▶", "‖");
        static final Glyphs ASCII = new Glyphs("|- ", "`- ", "|  ", "   ", "+", "x", "~", ">", "*", "=>", "||");
    }
}
