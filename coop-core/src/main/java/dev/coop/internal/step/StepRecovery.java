package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Advance;
import dev.coop.internal.store.LogEntry;
import dev.coop.internal.store.LogNames;

import dev.coop.failure.CooperationException;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.EventType;
import dev.coop.failure.Failure;
import dev.coop.RetryPolicy;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What happens when a claimed run's transaction goes wrong: user code threw (retry, park, or roll the run back, after
 * the failed step's finally part), writing the transition failed, user code ended the transaction, or Coop itself
 * could not process the run. Trouble that needs the whole transaction rolled back goes to
 * {@link StepTransaction#undo}: alone, the transaction is rolled back there; in a round, the round is aborted and the
 * run settled alone afterwards.
 */
final class StepRecovery {
    private static final Logger log = LoggerFactory.getLogger(StepRecovery.class);

    private final EngineContext engine;
    private final StepTransaction tx;
    private final Commits commits;
    private final Rollbacks rollbacks;
    private final RetryLater retries;
    private final Payloads payloads;

    StepRecovery(EngineContext engine, StepPath path) {
        this.engine = engine;
        this.tx = path.tx();
        this.commits = path.commits();
        this.rollbacks = path.rollbacks();
        this.retries = path.retries();
        this.payloads = path.payloads();
    }

    /**
     * Coop itself could not process the run (a bug, or a log entry it cannot read): park it with the reason, so it
     * neither blocks the runs behind it nor is retried in a tight loop.
     */
    StepEnd engineFailed(Connection c, ClaimedRun run, Throwable e) throws SQLException {
        tx.undo(c, e, run.id(), alone -> parkEngineFailure(alone, run, e));
        return parkEngineFailure(c, run, e);
    }

    /** After {@link #engineFailed}'s rollback: the run parked, unless another engine moved it meanwhile. */
    private StepEnd parkEngineFailure(Connection c, ClaimedRun run, Throwable e) throws SQLException {
        log.error("Engine {} could not process run {} (saga {}); parking it", engine.engineId(), run.id(), run.saga(),
                e);
        ClaimedRun again = engine.store().reclaimUnchanged(c, run, engine.engineId());
        if (again == null) {
            c.commit();
            return StepEnd.STOP;
        }
        Failure failure = new Failure("Coop could not process this run: " + e, "dev.coop.EngineFailure",
                engine.source(run), List.of(), List.of(Failure.of(e, engine.source(run))));
        engine.store().attempts().parked(c, again, engine.engineId(), again.nextStep(), again.attempt(),
                failure.toJson());
        return commits.commit(c, again, List.of(),
                Advance.from(again).status(RunStatus.PARKED).failure(failure.toJson()));
    }

    /**
     * The last line of defence: user code ended the transaction that claimed the run by a route the guarded connection
     * could not refuse (the driver's own classes, unwrapped), so the transaction Coop would commit is not the step's
     * (the advance's transaction-id check, or the step's savepoint, says so). What the code wrote before may be
     * committed and the run's lock was let go: everything since is rolled back, the run is locked again unless another
     * engine moved it meanwhile, and the part fails without running user code again (a failed step's finally part is
     * not run, a failed finally part counts as run): a step, child-failure handler or finally part rolls the run back,
     * a compensation ends it ROLLBACK_FAILED. It is never advanced as if it had succeeded.
     */
    StepEnd transactionEnded(Connection c, ClaimedRun run, SQLException e) throws SQLException {
        tx.undo(c, e, run.id(), alone -> failEndedTransaction(alone, run, e));
        return failEndedTransaction(c, run, e);
    }

    /** After {@link #transactionEnded}'s rollback: the run locked again and its part failed. */
    private StepEnd failEndedTransaction(Connection c, ClaimedRun run, SQLException e) throws SQLException {
        ClaimedRun again = engine.store().reclaimUnchanged(c, run, engine.engineId());
        if (again == null) {
            c.commit(); // another engine took the run meanwhile and moved it on
            return StepEnd.STOP;
        }
        Saga<?> saga = engine.sagas().get(run.saga(), run.sagaVersion());
        String part = partName(run, saga);
        log.error("{} of run {} (saga {}) ended its own transaction, which Coop commits; failing it: {}",
                part == null ? "User code" : "'" + part + "'", run.id(), run.saga(), Throwables.describe(e));
        Failure failure = Failure.of(e, engine.source(run));
        if (again.rollback()) {
            Failure failed = failure.withCauses(List.of(Failure.fromJson(again.rollbackCause())));
            return commits.commit(c, again,
                    List.of(new LogEntry(EventType.ROLLBACK_FAILED, part, failed.toJson())),
                    Advance.from(again).status(RunStatus.ROLLBACK_FAILED).failure(failed.toJson()));
        }
        // a finally part that did this counts as run (the rollback path would otherwise run it again)
        Saga.Step<?> step = again.failedChildren() == 0 && again.stepIndex() < saga.steps().size()
                ? saga.steps().get(again.stepIndex())
                : null;
        return rollbacks.start(c, again, saga, part, failure,
                step != null && step.isFinallyPart() ? step.finallyOf() : null);
    }

    /** The name of the part the claim of {@code run} was executing (for the log), or null. */
    private static String partName(ClaimedRun run, Saga<?> saga) {
        try {
            if (run.rollback()) {
                Integer instance = run.history().rollbackInstance();
                return instance == null ? null : InstanceNames.rollbackOf(InstanceNames.instanceName(saga, instance));
            }
            if (run.failedChildren() > 0) {
                int instance = run.history().recent()[0];
                return saga.steps().get(instance >= 0 ? instance : -1 - instance).name();
            }
            return run.stepIndex() < saga.steps().size() ? saga.steps().get(run.stepIndex()).name() : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * User code (a step, a finally part or a child-failure handler) threw. Its writes are undone back to the
     * savepoint taken before it touched the connection, keeping the run's row lock, so no other engine can run it
     * meanwhile. Then, in the same transaction: database trouble is retried later, a cancellation makes the run give
     * up, a retry policy may schedule another attempt or park the run, and anything else rolls the run back.
     */
    StepEnd stepFailed(Connection c, Part part, StepContextImpl<?> context, Throwable thrown) throws SQLException {
        StepEnd settled = settledAsTrouble(c, part, context, thrown);
        if (settled != null) {
            return settled;
        }
        ClaimedRun run = part.run();
        String step = part.name();
        Failure failure = Failure.of(thrown, engine.source(run));
        String json = failure.toJson();
        // a step refused for ending its transaction is wrong, not unlucky: trying it again would only refuse it again
        RetryPolicy policy = context.retryPolicy; // a step's own; none for finally parts and handlers
        boolean retryable = policy != null && !(thrown instanceof CooperationException) && !context.session.refused();
        try {
            if (retryable && policy.shouldRetry(thrown, run.attempt())) {
                long delay = policy.delayAfter(run.attempt()).toMillis();
                log.info("Step '{}' of run {} (saga {}) failed on attempt {} ({}); retrying in {} ms", step, run.id(),
                        run.saga(), run.attempt(), Throwables.describe(thrown), delay);
                engine.store().attempts().failed(c, run, engine.engineId(), step, run.attempt(), json);
                StepEnd end = commits.commit(c, run, List.of(),
                        Advance.from(run).attempt(run.attempt() + 1, delay, json).checkingCancellation());
                engine.dispatcher().dueIn(delay);
                return end.stop();
            }
            if (retryable && policy.parksWhenExhausted()) {
                log.warn("Step '{}' of run {} (saga {}) failed on its last attempt {} ({}); parked for an operator",
                        step, run.id(), run.saga(), run.attempt(), Throwables.describe(thrown));
                engine.store().attempts().parked(c, run, engine.engineId(), step, run.attempt(), json);
                return commits.commit(c, run, List.of(),
                        Advance.from(run).status(RunStatus.PARKED).failure(json).checkingCancellation());
            }
        } catch (SQLException e) {
            return writeFailed(c, part, e); // cancelled meanwhile, or database trouble
        }
        log.info("Step '{}' of run {} (saga {}) failed: {}", step, run.id(), run.saga(), Throwables.describe(thrown));
        engine.store().attempts().ended(c, run, engine.engineId(), step);
        return rollBack(c, part, failure);
    }

    /**
     * The first answers to a failed part, whatever it threw: its writes undone (or the run retried later when that
     * fails), database trouble retried later, a cancelled scope given up on. Null when none applies.
     */
    private StepEnd settledAsTrouble(Connection c, Part part, StepContextImpl<?> context, Throwable thrown)
            throws SQLException {
        ClaimedRun run = part.run();
        try {
            context.discardWrites();
        } catch (SQLException e) {
            if (Throwables.endedTransaction(e)) {
                throw e; // see transactionEnded
            }
            retries.retry(c, run, part.name(), e, false);
            return StepEnd.STOP;
        }
        boolean interruptedByShutdown = thrown instanceof InterruptedException && engine.dispatcher().stopped();
        if (Throwables.isInfrastructure(thrown) || interruptedByShutdown) {
            retries.retry(c, run, part.name(), thrown, true);
            return StepEnd.STOP;
        }
        String cancellation = engine.store().cancellation(c, run.rootId(), run.cancelScope());
        if (cancellation != null) {
            Failure gaveUp = Throwables.gaveUp(cancellation, engine.source(run)).failure();
            engine.store().attempts().ended(c, run, engine.engineId(), part.name());
            return rollBack(c, part, gaveUp);
        }
        return null;
    }

    /** Rolls the part's run back with {@code failure}, after the failed step's finally part if it has one to run. */
    private StepEnd rollBack(Connection c, Part part, Failure failure) throws SQLException {
        return rollbacks.startAfterFinally(c, part.run(), part.saga(), part.name(), failure,
                finallyBeforeRollback(c, part.run(), part.saga(), part.definition()));
    }

    /**
     * A step failed and its run rolls back: when the step has a finally part that has not run, run it now, in the
     * failing transaction (the step's own writes are already undone). A failing finally part is logged and its
     * writes undone; it counts as run either way.
     *
     * @return the index of the step whose finally part ran (to record), or null
     */
    private <P> Rollbacks.FinallyRan finallyBeforeRollback(Connection c, ClaimedRun run, Saga<P> saga,
            Saga.Step<?> failed) throws SQLException {
        if (failed == null) {
            return null;
        }
        if (failed.isFinallyPart()) {
            return new Rollbacks.FinallyRan(failed.finallyOf(), null); // the finally part itself failed: it ran
        }
        int index = saga.steps().indexOf(failed);
        if (failed.finallyBody() == null || index < 0 || RunBodies.finallyDone(run, index)) {
            return null;
        }
        @SuppressWarnings("unchecked")
        Saga.Step<P> step = (Saga.Step<P>) failed;
        P payload;
        try {
            payload = payloads.payload(run, saga);
        } catch (CoopValidationException e) {
            payload = null;
        }
        StepContextImpl<P> context = new StepContextImpl<>(run, step.name() + LogNames.FINALLY_SUFFIX, payload,
                engine, c, StepContextImpl.Kind.FINALLY, run.history().executions(index) + 1,
                engine.json().readContext(run.context()), new int[0]);
        Throwable thrown = InvokeUserCode.invoke(() -> step.finallyBody().run(context), context);
        if (thrown != null) {
            log.warn("Finally part of step '{}' of run {} (saga {}) failed: {}", step.name(), run.id(), run.saga(),
                    Throwables.describe(thrown));
            context.discardWrites();
        }
        return new Rollbacks.FinallyRan(index, context);
    }

    /**
     * Writing a transition failed (database trouble, a cancellation detected at commit, or data the database
     * refused). The whole transaction is rolled back; the run is re-locked only if nobody moved it meanwhile.
     */
    StepEnd writeFailed(Connection c, Part part, Throwable thrown) throws SQLException {
        tx.undo(c, thrown, part.run().id(), alone -> failUnwritten(alone, part, thrown));
        return failUnwritten(c, part, thrown);
    }

    /** After {@link #writeFailed}'s rollback: retried later, or the run locked again and rolled back. */
    private StepEnd failUnwritten(Connection c, Part part, Throwable thrown) throws SQLException {
        ClaimedRun run = part.run();
        String step = part.name();
        if (!Throwables.isCancelled(thrown) && Throwables.isBookkeepingTrouble(thrown)) {
            retries.retry(c, run, step, thrown, false);
            return StepEnd.STOP;
        }
        ClaimedRun again = engine.store().reclaimUnchanged(c, run, engine.engineId());
        if (again == null) {
            c.commit(); // another engine took the run meanwhile and moved it on
            return StepEnd.STOP;
        }
        Failure failure = again.cancellation() != null
                ? Throwables.gaveUp(again.cancellation(), engine.source(run)).failure()
                : Failure.of(thrown, engine.source(run));
        if (again.cancellation() == null) {
            log.warn("Step '{}' of run {} (saga {}) could not be committed, and its run rolls back: {} (SQLSTATE {})",
                    step, run.id(), run.saga(), Throwables.describe(thrown), Throwables.sqlState(thrown));
        }
        return rollbacks.startAfterFinally(c, again, part.saga(), step, failure,
                finallyBeforeRollback(c, again, part.saga(), part.definition()));
    }
}
