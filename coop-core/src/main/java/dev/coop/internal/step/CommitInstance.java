package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Advance;
import dev.coop.internal.store.LogEntry;
import dev.coop.internal.task.ExternalTasks;
import dev.coop.internal.task.TaskRequest;

import dev.coop.inspect.EventType;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

/**
 * The write-and-commit stage of a step instance that succeeded (a step, a finally part, a child-failure handler): the
 * messages it launched, the external tasks it opened, its log rows and the run's move, then the commit (or, in a
 * round, the round's). A write that fails goes to {@link StepRecovery#writeFailed}.
 */
final class CommitInstance {
    private final EngineContext engine;
    private final StepTransaction tx;
    private final Commits commits;
    private final Decisions decisions;
    private final ExternalTasks tasks;
    private final StepRecovery failures;

    CommitInstance(EngineContext engine, StepTransaction tx, Commits commits, Decisions decisions,
            ExternalTasks tasks, StepRecovery failures) {
        this.engine = engine;
        this.tx = tx;
        this.commits = commits;
        this.decisions = decisions;
        this.tasks = tasks;
        this.failures = failures;
    }

    /**
     * A step instance that succeeded, and where its run goes next.
     *
     * @param part the run, its saga and the instance's name in the log
     * @param context the body's context: what it launched, its context values, its result
     * @param instance the step index of the instance, or {@code -1 - index} for a child-failure handler of the step
     * @param nextStep the index of the step that comes next ({@code steps().size()}: the run is done)
     * @param wakeAt when the next step may start (null: at once)
     * @param finallyDone the step whose finally part this instance was, to record as run, or null
     */
    record Instance(Part part, StepContextImpl<?> context, int instance, int nextStep, OffsetDateTime wakeAt,
            Integer finallyDone) {
    }

    /** Writes what the instance launched, records it, and moves the run on. */
    StepEnd commit(Connection c, Instance done) throws SQLException {
        ClaimedRun run = done.part().run();
        String name = done.part().name();
        StepContextImpl<?> context = done.context();
        try {
            engine.store().attempts().ended(c, run, engine.engineId(), name); // after many attempts: the last one
            java.util.Map<String, Integer> launched = new java.util.HashMap<>();
            int children = context.launches.writeCounted(c,
                    new StepLaunches.Origin(run, done.part().saga().name(), name, run.stepsDone()), launched);
            String contextJson = context.contextJson();
            if (!context.children.tasks.isEmpty()) {
                children += tasks.open(c, new ExternalTasks.Opener(run, run.stepsDone(), name,
                        engine.engineId(), contextJson, context.deadline()
                                .map(d -> d.at().atOffset(ZoneOffset.UTC)).orElse(null)),
                        context.children.tasks);
            }
            Advance advance = advance(c, done, contextJson, children);
            StepEnd end = moveOn(c, done, advance, new ArrayList<>());
            if (!launched.isEmpty()) { // committed (or, in a round, when the round commits): one claim per run
                tx.afterCommit(() -> launched.forEach(engine.dispatcher()::wake));
            }
            return end;
        } catch (SQLException | RuntimeException e) {
            Saga<?> saga = done.part().saga();
            return failures.writeFailed(c, new Part(run, saga,
                    done.instance() >= 0 ? saga.steps().get(done.instance()) : null, name), e);
        }
    }

    /** The run's move: to the next step, or waiting for the {@code children} the instance caused, or done. */
    private Advance advance(Connection c, Instance done, String contextJson, int children) throws SQLException {
        ClaimedRun run = done.part().run();
        Saga<?> saga = done.part().saga();
        int nextStep = done.nextStep();
        String nextName = nextStep < saga.steps().size() ? saga.steps().get(nextStep).name() : null;
        String finalName = nextName == null ? saga.steps().getLast().name() : null;
        Advance advance = Advance.from(run).executed(done.instance(), nextStep, nextName, finalName, children)
                .context(contextJson).result(done.context().result());
        if (children > 0) {
            Decisions.Wait wait = decisions.onWait(c, run, saga, done.context().context(), false, run.stepsDone(),
                    children);
            OffsetDateTime timeout = done.context().children.tasks.stream().map(TaskRequest::timeoutAt)
                    .filter(java.util.Objects::nonNull).min(java.util.Comparator.naturalOrder()).orElse(null);
            if (timeout != null) {
                wait = wait.wakeAt(timeout);
            }
            wait.applyTo(advance).pending(wait.pending());
            children = wait.pending();
        }
        if (children == 0) {
            advance.status(nextStep >= saga.steps().size() ? RunStatus.COMMITTED : RunStatus.RUNNABLE)
                    .runnableAt(done.wakeAt());
        }
        return advance;
    }

    /**
     * Writes the instance's log rows and the run's move, and commits; tells the dispatcher when a run that stays
     * runnable is due later.
     *
     * @return how the commit ended: the run continues at once when it is runnable now
     */
    private StepEnd moveOn(Connection c, Instance done, Advance advance, List<String> woken) throws SQLException {
        ClaimedRun run = done.part().run();
        String name = done.part().name();
        List<LogEntry> entries = new ArrayList<>(2);
        entries.add(new LogEntry(EventType.SUSPENDED, name, null,
                done.context().contextChanged() ? advance.context() : null));
        if (advance.status() == RunStatus.COMMITTED) {
            entries.add(LogEntry.of(EventType.COMMITTED, done.part().saga().steps().getLast().name()));
        }
        OffsetDateTime due = advance.runnableAt();
        if (done.finallyDone() != null) {
            advance.finallyDone(done.finallyDone());
        }
        boolean delayed = due != null && due.isAfter(run.claimedAt());
        StepEnd end = commits.commit(c, run, entries, advance, woken);
        if (delayed && end.continueNow()) {
            engine.dispatcher().dueIn(java.time.Duration.between(run.claimedAt(), due).toMillis());
            return end.stop();
        }
        return end;
    }
}
