package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Advance;
import dev.coop.internal.store.ChildFailure;
import dev.coop.internal.store.LogEntry;
import dev.coop.internal.store.LogNames;
import dev.coop.internal.task.TaskCompensations;

import dev.coop.failure.ChildRollbackFailedException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.CoopValidationException;
import dev.coop.CooperationContext;
import dev.coop.inspect.EventType;
import dev.coop.failure.Failure;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stage COMPENSATE of the rollback path: undoes the instance at the run's {@code rollback_seq} by running its step's
 * compensation (and the step's finally part, if it never ran), then moves the run to the previous instance, or ends
 * it ROLLED_BACK after the first, or ROLLBACK_FAILED when the compensation (or the runs the instance caused) could not
 * be undone.
 */
final class CompensateInstance {
    private static final Logger log = LoggerFactory.getLogger(CompensateInstance.class);

    private final EngineContext engine;
    private final Commits commits;
    private final Rollbacks rollbacks;
    private final RetryLater retries;
    private final Payloads payloads;
    private final TaskCompensations tasks;

    CompensateInstance(EngineContext engine, StepPath path, TaskCompensations tasks) {
        this.engine = engine;
        this.commits = path.commits();
        this.rollbacks = path.rollbacks();
        this.retries = path.retries();
        this.payloads = path.payloads();
        this.tasks = tasks;
    }

    /** The instance being undone: the run, its saga, the instance's seq and step index, its name in the log. */
    private record Target<P>(ClaimedRun run, Saga<P> saga, int seq, int instance, String name) {
        /** The name of its compensation in the log. */
        String step() {
            return InstanceNames.rollbackOf(name);
        }
    }

    /**
     * What undoing the instance leaves to write: its log rows, the compensation named, the run's context after it
     * (null: unchanged), the step whose finally part ran, and what that finally part launched (runs to wait for, and
     * sagas to wake).
     */
    private record Undone(List<LogEntry> entries, String step, String contextJson, Integer finallyRan, int launched,
            List<String> woken) {
    }

    /** @return how the transaction ended (continuing at once when the rollback does) */
    <P> StepEnd compensate(Connection c, ClaimedRun run, Saga<P> saga, CooperationContext runContext)
            throws SQLException {
        int seq = run.rollbackSeq();
        int instance = RollbackExecutor.instance(run);
        String name = InstanceNames.instanceName(saga, instance);
        // the compensations of the instance's completed tasks finished with its children: they say how
        List<TaskCompensations.Failed> failedTasks = instance >= 0 ? tasks.settle(c, run.id(), seq) : List.of();
        if (run.failedChildren() > 0 || !failedTasks.isEmpty()) {
            return childRollbacksFailed(c, run, seq, name, failedTasks);
        }
        if (instance < 0) {
            // a handler run has nothing of its own to undo
            return next(c, run, saga, new Undone(new ArrayList<>(), null, null, null, 0, List.of()));
        }
        Target<P> target = new Target<>(run, saga, seq, instance, name);
        Compensated result = runCompensation(c, target, runContext);
        if (result.thrown() != null && retriedLater(c, target, result)) {
            return StepEnd.STOP;
        }
        return afterCompensation(c, target, result, runContext);
    }

    /**
     * A compensation threw: its writes are undone; database trouble is retried later (true), anything else logged
     * (false: the run ends ROLLBACK_FAILED).
     */
    private boolean retriedLater(Connection c, Target<?> target, Compensated result) throws SQLException {
        ClaimedRun run = target.run();
        String step = target.step();
        Throwable thrown = result.thrown();
        try {
            result.context().discardWrites();
        } catch (SQLException e) {
            if (Throwables.endedTransaction(e)) {
                throw e; // the compensation ended its transaction: StepRecovery#transactionEnded
            }
            retries.retry(c, run, step, e, false);
            return true;
        }
        if (Throwables.isInfrastructure(thrown)) {
            retries.retry(c, run, step, thrown, true);
            return true;
        }
        log.warn("Compensation '{}' of run {} (saga {}) failed: {}", step, run.id(), run.saga(),
                Throwables.describe(thrown));
        return false;
    }

    /** After the compensation: the step's finally part if it never ran, then the move on, or ROLLBACK_FAILED. */
    private <P> StepEnd afterCompensation(Connection c, Target<P> target, Compensated result,
            CooperationContext runContext) throws SQLException {
        ClaimedRun run = target.run();
        int instance = target.instance();
        Throwable thrown = result.thrown();
        // the step's finally part, if it never ran: after the compensation (its writes undone if it failed)
        Integer finallyRan = null;
        StepContextImpl<?>[] finallyPart = new StepContextImpl<?>[1];
        if (target.saga().steps().get(instance).finallyBody() != null && !RunBodies.finallyDone(run, instance)) {
            finallyRan = instance;
            Throwable finallyFailed = runFinally(c, target,
                    thrown == null && result.context() != null ? result.context().context() : runContext,
                    finallyPart);
            if (finallyFailed != null && Throwables.isInfrastructure(finallyFailed)) {
                retries.retry(c, run, target.step(), finallyFailed, false); // compensation and finally: later
                return StepEnd.STOP;
            }
            if (finallyFailed != null) {
                log.warn("Finally part of step '{}' of run {} (saga {}) failed during its rollback: {}", target.name(),
                        run.id(), run.saga(), finallyFailed.toString());
                thrown = thrown != null ? thrown : finallyFailed;
            }
        }
        if (thrown == null) {
            return next(c, run, target.saga(), undone(c, target, result.context(), finallyRan, finallyPart[0]));
        }
        return rollbackFailed(c, target, thrown, finallyRan);
    }

    /** What a compensation that succeeded (or there was none) leaves to write. */
    private Undone undone(Connection c, Target<?> target, StepContextImpl<?> context, Integer finallyRan,
            StepContextImpl<?> finallyPart) throws SQLException {
        ClaimedRun run = target.run();
        String step = target.step();
        List<LogEntry> entries = new ArrayList<>(2);
        boolean changed = context != null && context.contextChanged();
        String contextJson = changed ? context.contextJson() : null;
        entries.add(new LogEntry(EventType.SUSPENDED, step, null, contextJson));
        List<String> woken = new ArrayList<>();
        int launched = rollbacks.emitFinally(c, run, target.saga(), finallyPart, target.seq(), woken);
        return new Undone(entries, step, changed ? contextJson : run.context(), finallyRan, launched, woken);
    }

    /** The compensation (or the finally part after it) failed: the run ends ROLLBACK_FAILED. */
    private StepEnd rollbackFailed(Connection c, Target<?> target, Throwable thrown, Integer finallyRan)
            throws SQLException {
        ClaimedRun run = target.run();
        Failure failure = Failure.of(thrown, engine.source(run))
                .withCauses(List.of(Failure.fromJson(run.rollbackCause())));
        Advance failed = Advance.from(run).status(RunStatus.ROLLBACK_FAILED).failure(failure.toJson());
        if (finallyRan != null) {
            failed.finallyDone(finallyRan);
        }
        return commits.commit(c, run,
                List.of(new LogEntry(EventType.ROLLBACK_FAILED, target.step(), failure.toJson())), failed);
    }

    /**
     * Runs the finally part of the instance's step, which had not run, after its compensation, in the same
     * transaction. A failure undoes the finally part's writes and is returned.
     */
    private <P> Throwable runFinally(Connection c, Target<P> target, CooperationContext context,
            StepContextImpl<?>[] ran) throws SQLException {
        ClaimedRun run = target.run();
        Saga.Step<P> step = target.saga().steps().get(target.instance());
        StepContextImpl<P> finallyContext = new StepContextImpl<>(run, step.name() + LogNames.FINALLY_SUFFIX,
                payloadOrNull(run, target.saga()), engine, c, StepContextImpl.Kind.FINALLY,
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
            return payloads.payload(run, saga);
        } catch (CoopValidationException e) {
            return null; // the payload never was readable
        }
    }

    /** What a compensation did: null {@code thrown} when it succeeded (or there was none). */
    private record Compensated(StepContextImpl<?> context, Throwable thrown) {
    }

    private <P> Compensated runCompensation(Connection c, Target<P> target, CooperationContext runContext) {
        ClaimedRun run = target.run();
        Saga.Step<P> step = target.saga().steps().get(target.instance());
        if (step.compensation() == null) {
            return new Compensated(null, null);
        }
        StepContextImpl<P> context = new StepContextImpl<>(run, target.step(), payloadOrNull(run, target.saga()),
                engine, c, StepContextImpl.Kind.COMPENSATION, iteration(run), runContext,
                new int[0]);
        CooperationException cause = CooperationException.of(Failure.fromJson(run.rollbackCause()));
        return new Compensated(context,
                InvokeUserCode.invoke(() -> step.compensation().compensate(context, cause), context));
    }

    /** Moves to the previous instance, or finishes with ROLLED_BACK after the first. */
    private StepEnd next(Connection c, ClaimedRun run, Saga<?> saga, Undone undone) throws SQLException {
        int seq = run.rollbackSeq();
        List<LogEntry> entries = undone.entries();
        String step = undone.step();
        String contextJson = undone.contextJson();
        Integer finallyRan = undone.finallyRan();
        int launched = undone.launched();
        List<String> woken = undone.woken();
        ClaimedRun current = contextJson == null ? run : withContext(run, contextJson);
        if (seq == 0 && launched == 0) {
            return rollbacks.finish(c, current, entries,
                    step != null ? step : InstanceNames.rollbackOf(saga.steps().getFirst().name()), run.rollbackCause(),
                    finallyRan);
        }
        // a finally part that launched during the rollback: its runs finish before the rollback goes on
        Advance advance = Advance.from(current)
                .rollingBack(seq - 1, seq == 0 ? Rollbacks.FINISH : "CHILDREN", run.rollbackCause(), launched)
                .failure(run.rollbackCause());
        if (launched > 0) {
            advance.status(RunStatus.WAITING);
        }
        if (finallyRan != null) {
            advance.finallyDone(finallyRan);
        }
        return commits.commit(c, run, entries, advance, woken);
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
                r.runnableAt(), r.cancelFrom(), r.orderingKey());
    }

    /**
     * Runs the instance caused could not be undone: children whose rollback failed, or tasks whose compensation did
     * not commit. The run ends ROLLBACK_FAILED without compensating the instance, whose effects stay for an operator.
     */
    private StepEnd childRollbacksFailed(Connection c, ClaimedRun run, int seq, String name,
            List<TaskCompensations.Failed> failedTasks) throws SQLException {
        List<Failure> causes = new ArrayList<>();
        for (ChildFailure child : engine.store().childFailures(c, run.id(), seq)) {
            if (child.status() == RunStatus.ROLLBACK_FAILED) {
                causes.add(Failure.fromJson(child.failure()));
            }
        }
        int failed = causes.size();
        for (TaskCompensations.Failed task : failedTasks) {
            causes.add(new Failure("The compensation '" + task.topic() + "' of external task '" + task.task()
                    + "' did not commit (" + task.outcomes() + ")", ChildRollbackFailedException.TYPE,
                    engine.source(run), List.of(), task.failures().stream().map(Failure::fromJson).toList()));
        }
        causes.add(Failure.fromJson(run.rollbackCause()));
        List<String> what = new ArrayList<>(2);
        if (failed > 0) {
            what.add("the rollback of " + failed + (failed == 1 ? " run" : " runs"));
        }
        if (!failedTasks.isEmpty()) {
            what.add("the compensation of " + failedTasks.size() + " external task" + (failedTasks.size() == 1
                    ? ""
                    : "s"));
        }
        String text = String.join(" and ", what);
        Failure failure = new Failure(Character.toUpperCase(text.charAt(0)) + text.substring(1) + " caused by '"
                + name + "' failed", ChildRollbackFailedException.TYPE, engine.source(run), List.of(), causes);
        return commits.commit(c, run,
                List.of(new LogEntry(EventType.ROLLBACK_FAILED, InstanceNames.childRollbackOf(name), failure.toJson())),
                Advance.from(run).status(RunStatus.ROLLBACK_FAILED).failure(failure.toJson()));
    }
}
