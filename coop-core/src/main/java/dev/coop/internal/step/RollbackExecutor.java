package dev.coop.internal.step;

import dev.coop.internal.store.Emission;
import dev.coop.internal.store.LogEntry;
import dev.coop.internal.store.LogNames;
import dev.coop.internal.store.ChildFailure;
import dev.coop.internal.store.Uuids;
import dev.coop.internal.task.ExternalTasks;

import dev.coop.Compensation;

import dev.coop.failure.ChildRollbackFailedException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.CoopValidationException;
import dev.coop.CooperationContext;
import dev.coop.inspect.EventType;
import dev.coop.failure.Failure;
import dev.coop.failure.ParentSaidSoException;
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

    private final Decisions decisions;
    private final ExternalTasks tasks;

    RollbackExecutor(Transitions transitions, Decisions decisions) {
        this.transitions = transitions;
        this.engine = transitions.engine();
        this.decisions = decisions;
        this.tasks = new ExternalTasks(engine.store().schema(), engine.store().time());
    }

    /** @return true when the rollback continues at once */
    boolean execute(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
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
            case "COMPENSATE" -> compensate(c, run, saga, context);
            case Transitions.FINISH -> {
                // what a finally part launched during the rollback finished: nothing is left to undo
                transitions.finish(c, run, new ArrayList<>(2),
                        Transitions.rollbackOf(saga.steps().getFirst().name()), run.rollbackCause(), null);
                yield false;
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
    private boolean gaveUp(Connection c, ClaimedRun run, Saga<?> saga, Failure reason) throws SQLException {
        log.warn("Rollback of run {} (saga {}) gives up: {}", run.id(), run.saga(),
                dev.coop.render.TerminalText.escape(reason.message()));
        Failure missed = Decisions.gaveUp(reason, transitions.source(run))
                .withCauses(List.of(reason, Failure.fromJson(run.rollbackCause())));
        String step = run.rollbackSeq() != null && run.rollbackSeq() >= 0
                ? Transitions.rollbackOf(Transitions.instanceName(saga, instance(run)))
                : null;
        transitions.commit(c, run, List.of(new LogEntry(EventType.ROLLBACK_FAILED, step, missed.toJson())),
                Advance.from(run).status(RunStatus.ROLLBACK_FAILED).failure(missed.toJson()));
        return false;
    }

    private boolean start(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
        List<LogEntry> entries = new ArrayList<>(2);
        entries.add(new LogEntry(EventType.ROLLING_BACK, null, run.rollbackCause()));
        int seq = run.rollbackSeq();
        if (seq < 0) {
            transitions.finish(c, run, entries, Transitions.rollbackOf(saga.steps().getFirst().name()),
                    run.rollbackCause(), null);
            return false;
        }
        transitions.commit(c, run, entries,
                Advance.from(run).rollingBack(seq, "CHILDREN", run.rollbackCause(), 0).failure(run.rollbackCause()));
        return true;
    }

    private boolean rollBackChildren(Connection c, ClaimedRun run, Saga<?> saga, CooperationContext context)
            throws SQLException {
        int seq = run.rollbackSeq();
        String name = Transitions.instanceName(saga, instance(run));
        Failure parentSaidSo = new Failure(run.saga() + " is rolling back", ParentSaidSoException.TYPE,
                transitions.source(run), List.of(), List.of(Failure.fromJson(run.rollbackCause())));
        String step = Transitions.childRollbackOf(name);
        Map<String, Integer> woken = engine.store().requestChildRollbacks(c, run, engine.engineId(), step,
                parentSaidSo.toJson(), seq, engine.json().writeContext(context));
        int children = woken.values().stream().mapToInt(Integer::intValue).sum();
        List<String> wake = new ArrayList<>(woken.keySet());
        children += compensateTasks(c, run, seq, step, context, parentSaidSo.toJson(), wake);
        Advance advance = Advance.from(run).rollingBack(seq, "COMPENSATE", run.rollbackCause(), children)
                .status(RunStatus.RUNNABLE).failure(run.rollbackCause());
        if (children > 0) {
            decisions.onWait(c, run, saga, context, true, seq, children, advance);
        }
        RunStatus status = transitions.commit(c, run, List.of(LogEntry.of(EventType.SUSPENDED, step)), advance,
                wake);
        if (status == RunStatus.RUNNABLE && advance.runnableAt() != null) {
            engine.dispatcher().dueIn(java.time.Duration.between(run.claimedAt(), advance.runnableAt()).toMillis());
            return false;
        }
        return status == RunStatus.RUNNABLE;
    }

    /**
     * The external tasks the instance opened that completed are compensated: each declared compensation is launched
     * in this run's scope (as a child of the instance), and the rollback waits for its runs like for any child.
     *
     * @return how many runs the compensations created
     */
    private int compensateTasks(Connection c, ClaimedRun run, int seq, String step, CooperationContext context,
            String cause, List<String> wake) throws SQLException {
        List<Emission> launches = new ArrayList<>();
        for (ExternalTasks.Compensation compensation : tasks.compensate(c, run, seq, engine.engineId(), cause)) {
            if (compensation.topic() != null) {
                launches.add(new Emission(Uuids.v7(), compensation.topic(), compensation.payload(),
                        engine.json().writeContext(context), null));
            }
        }
        if (launches.isEmpty()) {
            return 0;
        }
        Map<String, Integer> created = engine.store().emit(c, run.lineage(), run.id(), seq, run.saga(),
                engine.engineId(), step, launches);
        wake.addAll(created.keySet());
        return created.values().stream().mapToInt(Integer::intValue).sum();
    }

    private boolean compensate(Connection c, ClaimedRun run, Saga<?> saga, CooperationContext runContext)
            throws SQLException {
        int seq = run.rollbackSeq();
        int instance = instance(run);
        String name = Transitions.instanceName(saga, instance);
        if (run.failedChildren() > 0) {
            return childRollbacksFailed(c, run, seq, name);
        }
        if (instance < 0) {
            // a handler run has nothing of its own to undo
            return next(c, run, saga, seq, new ArrayList<>(), null, null, null, 0, List.of());
        }
        String step = Transitions.rollbackOf(name);
        Compensated result = runCompensation(c, run, saga, seq, instance, step, runContext);
        Throwable thrown = result.thrown();
        if (thrown != null) {
            try {
                result.context().discardWrites();
            } catch (SQLException e) {
                if (Failures.endedTransaction(e)) {
                    throw e; // the compensation ended its transaction: StepExecutor#transactionEnded
                }
                transitions.retryLater(c, run, step, e, false);
                return false;
            }
            if (Failures.isInfrastructure(thrown)) {
                transitions.retryLater(c, run, step, thrown, true);
                return false;
            }
            log.warn("Compensation '{}' of run {} (saga {}) failed: {}", step, run.id(), run.saga(),
                    Failures.describe(thrown));
        }
        // the step's finally part, if it never ran: after the compensation (its writes undone if it failed)
        Integer finallyRan = null;
        StepContextImpl<?>[] finallyPart = new StepContextImpl<?>[1];
        if (saga.steps().get(instance).finallyBody() != null && !RunBodies.finallyDone(run, instance)) {
            finallyRan = instance;
            Throwable finallyFailed = runFinally(c, run, saga, seq, instance,
                    thrown == null && result.context() != null ? result.context().context() : runContext,
                    finallyPart);
            if (finallyFailed != null && Failures.isInfrastructure(finallyFailed)) {
                transitions.retryLater(c, run, step, finallyFailed, false); // compensation and finally: later
                return false;
            }
            if (finallyFailed != null) {
                log.warn("Finally part of step '{}' of run {} (saga {}) failed during its rollback: {}", name,
                        run.id(), run.saga(), finallyFailed.toString());
                thrown = thrown != null ? thrown : finallyFailed;
            }
        }
        if (thrown == null) {
            List<LogEntry> entries = new ArrayList<>(2);
            boolean changed = result.context() != null && result.context().contextChanged();
            String contextJson = changed ? result.context().contextJson() : null;
            entries.add(new LogEntry(EventType.SUSPENDED, step, null, contextJson));
            List<String> woken = new ArrayList<>();
            int launched = transitions.emitFinally(c, run, saga, finallyPart[0], seq, woken);
            return next(c, run, saga, seq, entries, step, changed ? contextJson : run.context(), finallyRan,
                    launched, woken);
        }
        Failure failure = Failure.of(thrown, transitions.source(run))
                .withCauses(List.of(Failure.fromJson(run.rollbackCause())));
        Advance failed = Advance.from(run).status(RunStatus.ROLLBACK_FAILED).failure(failure.toJson());
        if (finallyRan != null) {
            failed.finallyDone(finallyRan);
        }
        transitions.commit(c, run, List.of(new LogEntry(EventType.ROLLBACK_FAILED, step, failure.toJson())), failed);
        return false;
    }

    /**
     * Runs the finally part of step {@code index}, which had not run, after its compensation, in the same
     * transaction. A failure undoes the finally part's writes and is returned.
     */
    private <P> Throwable runFinally(Connection c, ClaimedRun run, Saga<P> saga, int seq, int index,
            CooperationContext context, StepContextImpl<?>[] ran) throws SQLException {
        Saga.Step<P> step = saga.steps().get(index);
        StepContextImpl<P> finallyContext = new StepContextImpl<>(run, step.name() + LogNames.FINALLY_SUFFIX,
                payloadOrNull(run, saga), engine, c, StepContextImpl.Kind.FINALLY,
                iteration(run), context, new int[0]);
        Throwable thrown = InvokeUserCode.invoke(() -> step.finallyBody().run(finallyContext), finallyContext);
        if (thrown != null) {
            finallyContext.discardWrites();
        }
        ran[0] = finallyContext;
        return thrown;
    }

    private <P> P payloadOrNull(ClaimedRun run, Saga<P> saga) {
        try {
            return transitions.payload(run, saga);
        } catch (CoopValidationException e) {
            return null; // the payload never was readable
        }
    }

    /** What a compensation did: null {@code thrown} when it succeeded (or there was none). */
    private record Compensated(StepContextImpl<?> context, Throwable thrown) {
    }

    private <P> Compensated runCompensation(Connection c, ClaimedRun run, Saga<P> saga, int seq, int instance,
            String name, CooperationContext runContext) {
        Saga.Step<P> step = saga.steps().get(instance);
        if (step.compensation() == null) {
            return new Compensated(null, null);
        }
        StepContextImpl<P> context = new StepContextImpl<>(run, name, payloadOrNull(run, saga), engine, c,
                StepContextImpl.Kind.COMPENSATION, iteration(run), runContext,
                new int[0]);
        CooperationException cause = CooperationException.of(Failure.fromJson(run.rollbackCause()));
        return new Compensated(context,
                InvokeUserCode.invoke(() -> step.compensation().compensate(context, cause), context));
    }

    /** Moves to the previous instance, or finishes with ROLLED_BACK after the first. */
    private boolean next(Connection c, ClaimedRun run, Saga<?> saga, int seq, List<LogEntry> entries, String step,
            String contextJson, Integer finallyRan, int launched, List<String> woken) throws SQLException {
        ClaimedRun current = contextJson == null ? run : withContext(run, contextJson);
        if (seq == 0 && launched == 0) {
            transitions.finish(c, current, entries,
                    step != null ? step : Transitions.rollbackOf(saga.steps().getFirst().name()), run.rollbackCause(),
                    finallyRan);
            return false;
        }
        // a finally part that launched during the rollback: its runs finish before the rollback goes on
        Advance advance = Advance.from(current)
                .rollingBack(seq - 1, seq == 0 ? Transitions.FINISH : "CHILDREN", run.rollbackCause(), launched)
                .failure(run.rollbackCause());
        if (launched > 0) {
            advance.status(RunStatus.WAITING);
        }
        if (finallyRan != null) {
            advance.finallyDone(finallyRan);
        }
        return transitions.commit(c, run, entries, advance, woken) == RunStatus.RUNNABLE;
    }

    /** The instance being rolled back (at {@code rollback_seq}), as the claim read it. */
    private static int instance(ClaimedRun run) {
        Integer instance = run.history().rollbackInstance();
        if (instance == null) {
            throw new IllegalStateException("Run " + run.id() + " has no step instance " + run.rollbackSeq()
                    + " to roll back");
        }
        return instance;
    }

    /** Which execution of its step the instance being rolled back was. */
    private static int iteration(ClaimedRun run) {
        Integer iteration = run.history().rollbackIteration();
        return iteration == null ? 1 : iteration;
    }

    /** The claimed run with another context (what a compensation left), for the transition that follows. */
    private static ClaimedRun withContext(ClaimedRun r, String context) {
        return new ClaimedRun(r.id(), r.saga(), r.sagaVersion(), r.messageId(), r.lineage(), r.parentId(), r.rollback(),
                r.stepIndex(),
                r.nextStep(), r.stepsDone(), r.history(), r.attempt(), r.started(), r.failedChildren(),
                r.rollbackSeq(), r.rollbackStage(), r.rollbackCause(), r.resolution(), r.retries(), r.version(),
                context, r.parentContext(), r.finallyDone(), r.pendingChildren(), r.awaited(), r.waitingSince(),
                r.cancellation(), r.topic(), r.payload(), r.messageCreatedAt(), r.claimedAt(), r.xact(),
                r.runnableAt());
    }

    private boolean childRollbacksFailed(Connection c, ClaimedRun run, int seq, String name) throws SQLException {
        List<Failure> causes = new ArrayList<>();
        for (ChildFailure child : engine.store().childFailures(c, run.id(), seq)) {
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
