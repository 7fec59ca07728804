package dev.coop.render;

import dev.coop.RunStatus;
import dev.coop.failure.Failure;
import dev.coop.inspect.RunOrdering;
import dev.coop.inspect.RunView;
import dev.coop.inspect.RunningStep;
import dev.coop.inspect.StepView;
import java.util.Set;

/** The one line of a run, a running step and a step in a tree: name, kind, status, times, what it launched. */
final class TreeLabels {
    static final String ROLLBACK_PREFIX = "Rollback of ";
    private static final String CHILDREN_SUFFIX = " (rolling back child scopes)";
    private static final String HANDLER_SUFFIX = " (child failure handler)";
    private static final String GAVE_UP = "dev.coop.failure.GaveUpException";
    private static final Set<String> CHILD_FAILURES = Set.of("dev.coop.failure.ChildRolledBackException",
            "dev.coop.failure.ChildRollbackFailedException");

    private final RenderOptions options;
    private final TextStyle style;

    TreeLabels(RenderOptions options, TextStyle style) {
        this.options = options;
        this.style = style;
    }

    String runLabel(RunView run) {
        StringBuilder s = new StringBuilder();
        if (dev.coop.ExternalTask.SAGA.equals(run.saga())) { // a task waits for the outside world, not a saga
            s.append(style.bold("external task " + run.topic())).append("  ");
            if (run.task() != null) {
                return s.append(taskStory(run.task()))
                        .append(options.ids() ? style.dim("  run " + run.runId()) : "").toString();
            }
        } else {
            s.append(style.bold(TextFormat.sagaName(run.saga(), run.sagaVersion())))
                    .append(style.dim(" on " + run.topic())).append("  ");
        }
        String status = run.running() != null ? "RUNNING" : run.status().name();
        if (!run.status().isFinished() && run.rollingBack()) {
            status += " (rolling back)";
        }
        s.append(style.colorStatus(status));
        if (run.waitingFor() != null) {
            s.append(style.dim(" (" + run.waitingFor() + ")"));
        }
        s.append(ordering(run.ordering(), run.status()));
        String took = TextFormat.duration(TextFormat.runStart(run), run.finishedAt());
        if (took != null) {
            s.append("  ").append(style.dim(took));
        }
        if (options.ids()) {
            s.append(style.dim("  run " + run.runId()));
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
            s.append(style.dim(" (held behind key '" + o.orderingKey() + "'"
                    + (o.heldBehind() == null ? "" : ": run " + o.heldBehind() + " ahead") + ")"));
        } else if (o.orderingKey() != null) {
            s.append(style.dim("  key '" + o.orderingKey() + "'"));
        }
        if (o.priority() != 0) {
            s.append(style.dim("  priority " + o.priority()));
        }
        return s.toString();
    }

    /**
     * An external task's line: key, state, who settled it, when it was opened and settled, how long it waited
     * ({@code key 'approval/1'  COMPLETED by ops:ada  opened 10:00:00.000, settled 10:01:41.000, waited 1 min 41 s}).
     */
    private String taskStory(dev.coop.inspect.TaskSummary t) {
        StringBuilder s = new StringBuilder();
        if (t.key() != null) {
            s.append(style.dim("key '" + t.key() + "'")).append("  ");
        }
        s.append(style.colorStatus(t.state() == dev.coop.TaskState.COMPLETED
                ? "COMPLETED"
                : t.state() == dev.coop.TaskState.OPEN ? "OPEN" : "ROLLED_BACK " + t.state().name()));
        if (t.settledBy() != null) {
            s.append(" by ").append(t.settledBy());
        }
        s.append(style.dim("  opened " + TextFormat.time(t.openedAt())));
        if (t.settledAt() != null) {
            s.append(style.dim(", settled " + TextFormat.time(t.settledAt())));
            s.append(style.dim(", waited " + TextFormat.duration(t.openedAt(), t.settledAt())));
        }
        return s.toString();
    }

    /** The step an engine executes now: name, engine, since when, attempt, last sign of life. */
    String runningLabel(RunningStep r) {
        StringBuilder s = new StringBuilder();
        s.append(style.yellow(style.glyphs().running())).append(' ').append(r.step()).append("  running");
        if (r.engine() != null) {
            s.append("  ").append(style.dim(r.engine()));
        }
        s.append("  since ").append(TextFormat.time(r.since()));
        s.append("  attempt ").append(r.attempt());
        if (r.lastActivity() != null) {
            s.append(style.dim("  last activity " + TextFormat.time(r.lastActivity())));
        }
        return s.toString();
    }

    String stepLabel(StepView step, int omitted) {
        Kind k = kind(step);
        String name = k.name();
        String kind = k.kind();
        String marker = k.marker();
        if (step.kind() == StepView.Kind.PARKED) {
            marker = style.ansi("35", marker);
        } else if (step.failure() != null) {
            marker = style.red(style.glyphs().fail());
        } else if (step.kind() == StepView.Kind.STEP) {
            marker = style.green(marker);
        } else {
            marker = style.yellow(marker);
        }
        StringBuilder s = new StringBuilder();
        s.append(marker).append(' ').append(name);
        if (step.iteration() > 1) {
            s.append(" #").append(step.iteration());
        }
        s.append("  ").append(kind);
        if (omitted > 0) {
            s.append(style.dim(" (" + omitted + (omitted == 1 ? " earlier attempt" : " earlier attempts")
                    + " counted, not kept)"));
        }
        if (step.engine() != null) {
            s.append("  ").append(style.dim(step.engine()));
        }
        String took = TextFormat.duration(step.startedAt(), step.endedAt());
        if (took != null) {
            s.append("  ").append(style.dim(took));
        }
        int n = step.launchedCount();
        if (n > 0) {
            s.append("  ").append(step.kind() == StepView.Kind.ROLLBACK_CHILDREN
                    ? "rolled back " + n + (n == 1 ? " message" : " messages")
                    : "launched " + n);
        }
        return s.toString();
    }

    /** What a step's line names: the step, its kind, and its marker (not coloured yet). */
    private record Kind(String name, String kind, String marker) {
    }

    private Kind kind(StepView step) {
        String name = step.name();
        return switch (step.kind()) {
            case CHILD_FAILURE_HANDLER -> new Kind(TextFormat.strip(name, "", HANDLER_SUFFIX), "child-failure handler",
                    style.glyphs().handler());
            case ROLLBACK_CHILDREN ->
                new Kind(TextFormat.strip(name, ROLLBACK_PREFIX, CHILDREN_SUFFIX), "rollback of children",
                        style.glyphs().undo());
            case COMPENSATION ->
                new Kind(TextFormat.strip(name, ROLLBACK_PREFIX, ""), "compensation", style.glyphs().undo());
            case ATTEMPT_FAILED ->
                new Kind(name, "attempt " + step.attempt() + " failed, retried", style.glyphs().fail());
            case PARKED -> new Kind(name, "parked after attempt " + step.attempt(), style.glyphs().parked());
            case RETRIED -> new Kind(name, "retried by an operator", style.glyphs().handler());
            case MARKED_DONE -> new Kind(name, "marked done by an operator (not run)", style.glyphs().handler());
            default -> new Kind(name, stepKind(step.failure()), style.glyphs().ok());
        };
    }

    /** A step's own kind: a step, or one that gave up or whose children failed. */
    private static String stepKind(Failure failure) {
        if (failure != null && GAVE_UP.equals(failure.type())) {
            return "gave up";
        } else if (failure != null && CHILD_FAILURES.contains(failure.type())) {
            return "children failed";
        }
        return "step";
    }
}
