package dev.coop.internal;

import dev.coop.ChildRollbackFailedException;
import dev.coop.CooperationException;
import dev.coop.CoopValidationException;
import dev.coop.EventType;
import dev.coop.Failure;
import dev.coop.ParentSaidSoException;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes one transaction of a run on the rollback path, which runs the saga backwards over its executed instances,
 * newest first. For each instance: stage CHILDREN asks the runs it caused to roll back and waits for them; stage
 * COMPENSATE then runs the step's compensation in its own transaction. A run asked to roll back by its parent or an
 * operator starts at stage START, which records its ROLLING_BACK.
 */
final class RollbackExecutor {
    private static final Logger log = LoggerFactory.getLogger(RollbackExecutor.class);

    private final Transitions transitions;
    private final EngineContext engine;

    RollbackExecutor(Transitions transitions) {
        this.transitions = transitions;
        this.engine = transitions.engine();
    }

    /** @return true when the rollback continues at once */
    boolean execute(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
        return switch (run.rollbackStage()) {
            case "START" -> start(c, run, saga);
            case "CHILDREN" -> rollBackChildren(c, run, saga);
            case "COMPENSATE" -> compensate(c, run, saga);
            default -> throw new IllegalStateException("Unknown rollback stage " + run.rollbackStage() + " of run "
                    + run.id());
        };
    }

    private boolean start(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
        List<LogEntry> entries = new ArrayList<>(2);
        entries.add(new LogEntry(EventType.ROLLING_BACK, null, run.rollbackCause()));
        int seq = run.rollbackSeq();
        if (seq < 0) {
            transitions.finish(c, run, entries, Transitions.rollbackOf(saga.steps().getFirst().name()),
                    run.rollbackCause());
            return false;
        }
        transitions.commit(c, run, entries,
                Advance.from(run).rollingBack(seq, "CHILDREN", run.rollbackCause(), 0).failure(run.rollbackCause()));
        return true;
    }

    private boolean rollBackChildren(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
        int seq = run.rollbackSeq();
        String name = Transitions.instanceName(saga, run.history()[seq]);
        Failure parentSaidSo = new Failure(run.saga() + " is rolling back", ParentSaidSoException.TYPE,
                transitions.source(run), List.of(), List.of(Failure.fromJson(run.rollbackCause())));
        String step = Transitions.childRollbackOf(name);
        Map<String, Integer> woken = engine.store().requestChildRollbacks(c, run, engine.engineId(), step,
                parentSaidSo.toJson(), seq);
        int children = woken.values().stream().mapToInt(Integer::intValue).sum();
        RunStatus status = children > 0 ? RunStatus.WAITING : RunStatus.RUNNABLE;
        return transitions.commit(c, run, List.of(LogEntry.of(EventType.SUSPENDED, step)),
                Advance.from(run).rollingBack(seq, "COMPENSATE", run.rollbackCause(), children).status(status)
                        .failure(run.rollbackCause()),
                woken.keySet()) == RunStatus.RUNNABLE;
    }

    private boolean compensate(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
        int seq = run.rollbackSeq();
        int instance = run.history()[seq];
        String name = Transitions.instanceName(saga, instance);
        if (run.failedChildren() > 0) {
            return childRollbacksFailed(c, run, seq, name);
        }
        if (instance < 0) {
            return next(c, run, saga, seq, new ArrayList<>(), null); // a handler run has nothing of its own to undo
        }
        String step = Transitions.rollbackOf(name);
        Compensated result = runCompensation(c, run, saga, instance, step);
        if (result.thrown() == null) {
            List<LogEntry> entries = new ArrayList<>(2);
            entries.add(LogEntry.of(EventType.SUSPENDED, step));
            return next(c, run, saga, seq, entries, step);
        }
        Throwable thrown = result.thrown();
        try {
            result.context().discardWrites();
        } catch (SQLException e) {
            transitions.retryLater(c, run, step, e, false);
            return false;
        }
        if (Failures.isInfrastructure(thrown)) {
            transitions.retryLater(c, run, step, thrown, true);
            return false;
        }
        log.warn("Compensation '{}' of run {} (saga {}) failed: {}", step, run.id(), run.saga(), thrown.toString());
        Failure failure = Failure.of(thrown, transitions.source(run))
                .withCauses(List.of(Failure.fromJson(run.rollbackCause())));
        transitions.commit(c, run, List.of(new LogEntry(EventType.ROLLBACK_FAILED, step, failure.toJson())),
                Advance.from(run).status(RunStatus.ROLLBACK_FAILED).failure(failure.toJson()));
        return false;
    }

    /** What a compensation did: null {@code thrown} when it succeeded (or there was none). */
    private record Compensated(StepContextImpl<?> context, Throwable thrown) {
    }

    private <P> Compensated runCompensation(Connection c, ClaimedRun run, Saga<P> saga, int instance, String name) {
        Saga.Step<P> step = saga.steps().get(instance);
        if (step.compensation() == null) {
            return new Compensated(null, null);
        }
        P payload;
        try {
            payload = transitions.payload(run, saga);
        } catch (CoopValidationException e) {
            payload = null; // the payload never was readable: the compensation gets none
        }
        StepContextImpl<P> context = new StepContextImpl<>(run, name, payload, engine.engineId(), c, engine.json(),
                engine.store(), false);
        CooperationException cause = CooperationException.of(Failure.fromJson(run.rollbackCause()));
        return new Compensated(context,
                StepExecutor.invoke(() -> step.compensation().compensate(context, cause), context));
    }

    /** Moves to the previous instance, or finishes with ROLLED_BACK after the first. */
    private boolean next(Connection c, ClaimedRun run, Saga<?> saga, int seq, List<LogEntry> entries, String step)
            throws SQLException {
        if (seq == 0) {
            transitions.finish(c, run, entries,
                    step != null ? step : Transitions.rollbackOf(saga.steps().getFirst().name()), run.rollbackCause());
            return false;
        }
        return transitions.commit(c, run, entries, Advance.from(run)
                .rollingBack(seq - 1, "CHILDREN", run.rollbackCause(), 0)
                .failure(run.rollbackCause())) == RunStatus.RUNNABLE;
    }

    private boolean childRollbacksFailed(Connection c, ClaimedRun run, int seq, String name) throws SQLException {
        List<Failure> causes = new ArrayList<>();
        for (Store.ChildFailure child : engine.store().childFailures(c, run.id(), seq)) {
            if (child.status() == RunStatus.ROLLBACK_FAILED) {
                causes.add(Failure.fromJson(child.failure()));
            }
        }
        causes.add(Failure.fromJson(run.rollbackCause()));
        Failure failure = new Failure("The rollback of " + (causes.size() - 1) + " run(s) caused by '" + name
                + "' failed", ChildRollbackFailedException.TYPE, transitions.source(run), List.of(), causes);
        transitions.commit(c, run,
                List.of(new LogEntry(EventType.ROLLBACK_FAILED, Transitions.childRollbackOf(name), failure.toJson())),
                Advance.from(run).status(RunStatus.ROLLBACK_FAILED).failure(failure.toJson()));
        return false;
    }
}
