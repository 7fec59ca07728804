package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Advance;
import dev.coop.internal.store.Emission;
import dev.coop.internal.store.LogEntry;
import dev.coop.internal.store.Uuids;
import dev.coop.internal.task.TaskCompensations;

import dev.coop.Compensation;

import dev.coop.CooperationContext;
import dev.coop.inspect.EventType;
import dev.coop.failure.Failure;
import dev.coop.failure.ParentSaidSoException;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes one transaction of a run on the rollback path, which runs the saga backwards over its executed instances,
 * newest first. For each instance: stage CHILDREN asks the runs it caused to roll back and waits for them; stage
 * COMPENSATE then runs the step's compensation in its own transaction. A run asked to roll back by its parent or an
 * operator starts at stage START, which records its ROLLING_BACK. Stage COMPENSATE is {@link CompensateInstance}.
 */
final class RollbackExecutor {
    private static final Logger log = LoggerFactory.getLogger(RollbackExecutor.class);

    private final EngineContext engine;
    private final Commits commits;
    private final Rollbacks rollbacks;

    private final Decisions decisions;
    private final TaskCompensations tasks;
    private final CompensateInstance compensation;

    RollbackExecutor(EngineContext engine, StepPath path, Decisions decisions) {
        this.engine = engine;
        this.commits = path.commits();
        this.rollbacks = path.rollbacks();
        this.decisions = decisions;
        this.tasks = new TaskCompensations(engine.store().schema(), engine.store().time());
        this.compensation = new CompensateInstance(engine, path, tasks);
    }

    /** @return how the transaction ended (continuing at once when the rollback does) */
    StepEnd execute(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
        if (run.pendingChildren() > 0) { // the time its strategy asked for came while child rollbacks still run
            return decisions.recheck(c, run, saga, true);
        }
        CooperationContext context = context(run);
        Failure giveUp = decisions.strategy(saga).giveUpOnRollbackPath(
                Decisions.facts(run, saga, context, run.claimedAt().toInstant(), run.cancellation())).orElse(null);
        if (giveUp != null) {
            return gaveUp(c, run, saga, giveUp);
        }
        return switch (run.rollbackStage()) {
            case "START" -> start(c, run, saga);
            case "CHILDREN" -> rollBackChildren(c, run, saga, context);
            case "COMPENSATE" -> compensation.compensate(c, run, saga, context);
            case Rollbacks.FINISH -> {
                // what a finally part launched during the rollback finished: nothing is left to undo
                yield rollbacks.finish(c, run, new ArrayList<>(2),
                        InstanceNames.rollbackOf(saga.steps().getFirst().name()), run.rollbackCause(), null);
            }
            default -> throw new IllegalStateException("Unknown rollback stage " + run.rollbackStage() + " of run "
                    + run.id());
        };
    }

    /**
     * What compensations see: the run's own last context combined with its parent's context at the moment the parent
     * asked it to roll back, the parent winning.
     */
    private CooperationContext context(ClaimedRun run) {
        CooperationContext own = engine.json().readContext(run.context());
        return run.parentContext() == null ? own : own.plus(engine.json().readContext(run.parentContext()));
    }

    /** The rollback gives up (its deadline passed, say): the run ends ROLLBACK_FAILED. */
    private StepEnd gaveUp(Connection c, ClaimedRun run, Saga<?> saga, Failure reason) throws SQLException {
        log.warn("Rollback of run {} (saga {}) gives up: {}", run.id(), run.saga(),
                dev.coop.render.TerminalText.escape(reason.message()));
        Failure missed = Decisions.gaveUp(reason, engine.source(run)) // caused by the reason, then what the
                .withCauses(List.of(Failure.fromJson(run.rollbackCause()))); // rollback undid
        String step = run.rollbackSeq() != null && run.rollbackSeq() >= 0
                ? InstanceNames.rollbackOf(InstanceNames.instanceName(saga, instance(run)))
                : null;
        if (run.rollbackSeq() != null && run.rollbackSeq() >= 0) {
            tasks.settle(c, run.id(), run.rollbackSeq()); // what finished says so; the run fails anyway
        }
        return commits.commit(c, run, List.of(new LogEntry(EventType.ROLLBACK_FAILED, step, missed.toJson())),
                Advance.from(run).status(RunStatus.ROLLBACK_FAILED).failure(missed.toJson()));
    }

    private StepEnd start(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
        List<LogEntry> entries = new ArrayList<>(2);
        entries.add(new LogEntry(EventType.ROLLING_BACK, null, run.rollbackCause()));
        int seq = run.rollbackSeq();
        if (seq < 0) {
            return rollbacks.finish(c, run, entries, InstanceNames.rollbackOf(saga.steps().getFirst().name()),
                    run.rollbackCause(), null);
        }
        return commits.commit(c, run, entries,
                Advance.from(run).rollingBack(seq, "CHILDREN", run.rollbackCause(), 0).failure(run.rollbackCause()));
    }

    private StepEnd rollBackChildren(Connection c, ClaimedRun run, Saga<?> saga, CooperationContext context)
            throws SQLException {
        int seq = run.rollbackSeq();
        String name = InstanceNames.instanceName(saga, instance(run));
        Failure parentSaidSo = new Failure(run.saga() + " is rolling back", ParentSaidSoException.TYPE,
                engine.source(run), List.of(), List.of(Failure.fromJson(run.rollbackCause())));
        String step = InstanceNames.childRollbackOf(name);
        Map<String, Integer> woken = engine.store().requestChildRollbacks(c, run, engine.engineId(), step,
                parentSaidSo.toJson(), seq, engine.json().writeContext(context));
        int children = woken.values().stream().mapToInt(Integer::intValue).sum();
        List<String> wake = new ArrayList<>(woken.keySet());
        children += compensateTasks(c, run, seq, step, context, parentSaidSo.toJson(), wake);
        Advance advance = Advance.from(run).rollingBack(seq, "COMPENSATE", run.rollbackCause(), children)
                .status(RunStatus.RUNNABLE).failure(run.rollbackCause());
        if (children > 0) {
            decisions.onWait(c, run, saga, context, true, seq, children).applyTo(advance);
        }
        StepEnd end = commits.commit(c, run, List.of(LogEntry.of(EventType.SUSPENDED, step)), advance, wake);
        if (end.continueNow() && advance.runnableAt() != null) {
            engine.dispatcher().dueIn(java.time.Duration.between(run.claimedAt(), advance.runnableAt()).toMillis());
            return end.stop();
        }
        return end;
    }

    /**
     * The external tasks the instance opened that completed are compensated: each declared compensation is launched
     * in this run's scope (as a child of the instance), and the rollback waits for its runs like for any child. A
     * cancellation of a scope above them (the one this rollback may answer) does not reach them: they run to their end.
     * The tasks read COMPENSATING until stage COMPENSATE settles them ({@link CompensateInstance}).
     *
     * @return how many runs the compensations created
     */
    private int compensateTasks(Connection c, ClaimedRun run, int seq, String step, CooperationContext context,
            String cause, List<String> wake) throws SQLException {
        List<Emission> launches = new ArrayList<>();
        Map<UUID, UUID> messages = new LinkedHashMap<>();
        for (TaskCompensations.Compensation compensation : tasks.compensate(c, run, seq, engine.engineId(), cause)) {
            if (compensation.topic() != null) {
                UUID message = Uuids.v7();
                messages.put(compensation.taskRun(), message);
                launches.add(new Emission(message, compensation.topic(), compensation.payload(),
                        engine.json().writeContext(context), null));
            }
        }
        if (launches.isEmpty()) {
            return 0;
        }
        tasks.launched(c, messages);
        Map<String, Integer> created = engine.store().emit(c, run.lineage(), run.id(), seq,
                run.childCancelFrom(true), run.saga(), engine.engineId(), step, launches); // runs to its end
        wake.addAll(created.keySet());
        return created.values().stream().mapToInt(Integer::intValue).sum();
    }

    /** The instance being rolled back (at {@code rollback_seq}), as the claim read it. */
    static int instance(ClaimedRun run) {
        Integer instance = run.history().rollbackInstance();
        if (instance == null) {
            throw new IllegalStateException("Run " + run.id() + " has no step instance " + run.rollbackSeq()
                    + " to roll back");
        }
        return instance;
    }
}
