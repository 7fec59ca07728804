package dev.coop.render;

import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.inspect.CollapsedRuns;
import dev.coop.inspect.RunView;
import dev.coop.inspect.RunningStep;
import dev.coop.inspect.StepView;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/** Draws a run and what is below it: its steps, under each step the runs it caused, and counted fan-outs. */
final class TreeText {
    private static final int MAX_UNHANDLED_SHOWN = 5;
    /** A step that caused more runs than this is shown as counts per saga, plus its runs that did not commit. */
    private static final int COLLAPSE_OVER = 50;
    private static final int MAX_EXCEPTIONS_SHOWN = 10;

    private final TextStyle style;
    private final TextStyle.Glyphs glyphs;
    private final TreeLabels labels;
    private final FailureText failures;

    TreeText(TextStyle style, TreeLabels labels, FailureText failures) {
        this.style = style;
        this.glyphs = style.glyphs();
        this.labels = labels;
        this.failures = failures;
    }

    /** A run's line, then its steps with the runs each caused, the runs no step claims, and counted runs. */
    void run(StringBuilder out, RunView run, String indent, boolean last) {
        Map<StepView, Integer> omitted = omittedAttempts(run.steps());
        out.append(indent).append(last ? glyphs.last() : glyphs.branch()).append(labels.runLabel(run)).append('\n');
        String inner = indent + (last ? glyphs.space() : glyphs.pipe());
        Placement placed = place(run);
        List<Object> items = placed.items();
        boolean failureShown = run.failure() == null
                || run.steps().stream().anyMatch(s -> run.failure().equals(s.failure()));
        if (!failureShown) {
            out.append(inner).append(items.isEmpty() ? glyphs.space() : glyphs.pipe())
                    .append(failures.failureLine(run.failure()))
                    .append('\n');
        }
        for (int i = 0; i < items.size(); i++) {
            boolean lastItem = i == items.size() - 1;
            if (items.get(i) instanceof StepView step) {
                step(out, step, placed.caused().get(step), placed.unhandled().getOrDefault(step, List.of()), inner,
                        lastItem,
                        omitted.getOrDefault(step, 0));
            } else if (items.get(i) instanceof RunningStep running) {
                out.append(inner).append(lastItem ? glyphs.last() : glyphs.branch())
                        .append(labels.runningLabel(running))
                        .append('\n');
            } else if (items.get(i) instanceof String line) {
                out.append(inner).append(lastItem ? glyphs.last() : glyphs.branch()).append(style.dim(line))
                        .append('\n');
            } else {
                run(out, (RunView) items.get(i), inner, lastItem);
            }
        }
    }

    /** What is drawn under a run, in order, and which runs (and unhandled messages) each step caused. */
    private record Placement(List<Object> items, Map<StepView, List<RunView>> caused,
            Map<StepView, List<MessageId>> unhandled) {
    }

    /** Places a run's children under the steps that launched them; the others follow the steps. */
    private Placement place(RunView run) {
        List<StepView> steps = run.steps();
        Map<MessageId, List<RunView>> byMessage = new LinkedHashMap<>();
        for (RunView child : run.children()) {
            byMessage.computeIfAbsent(child.messageId(), k -> new ArrayList<>()).add(child);
        }
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
        return new Placement(items, caused, unhandled);
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
        out.append(indent).append(last ? glyphs.last() : glyphs.branch())
                .append(labels.stepLabel(step, omittedAttempts))
                .append('\n');
        String inner = indent + (last ? glyphs.space() : glyphs.pipe());
        for (int i = 0; i < Math.min(unhandled.size(), MAX_UNHANDLED_SHOWN); i++) {
            out.append(inner).append(caused.isEmpty() ? "  " : glyphs.pipe().substring(0, 2))
                    .append(style
                            .yellow("UNHANDLED: no saga was registered for the topic of message " + unhandled.get(i)
                                    + " when it was launched"))
                    .append('\n');
        }
        if (unhandled.size() > MAX_UNHANDLED_SHOWN) {
            out.append(inner).append(caused.isEmpty() ? "  " : glyphs.pipe().substring(0, 2))
                    .append(style.yellow("UNHANDLED: " + (unhandled.size() - MAX_UNHANDLED_SHOWN) + " more messages"))
                    .append('\n');
        }
        if (step.failure() != null) {
            // under the step's name; the pipe continues to the runs the step caused
            out.append(inner).append(caused.isEmpty() ? "  " : glyphs.pipe().substring(0, 2))
                    .append(failures.failureLine(step.failure())).append('\n');
        }
        List<RunView> shown = caused.size() > COLLAPSE_OVER ? fanOut(out, caused, inner) : caused;
        for (int i = 0; i < shown.size(); i++) {
            run(out, shown.get(i), inner, i == shown.size() - 1);
        }
    }

    /** A fan-out: one line per saga, then only the runs that did not commit; returns the runs to draw. */
    private List<RunView> fanOut(StringBuilder out, List<RunView> caused, String inner) {
        List<RunView> shown;
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
            out.append(inner).append(lastLine ? glyphs.last() : glyphs.branch()).append(style.dim(lines.get(i)))
                    .append('\n');
        }
        return shown;
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
}
