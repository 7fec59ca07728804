package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Advance;
import dev.coop.internal.store.LogEntry;

import dev.coop.inspect.EventType;
import dev.coop.failure.Failure;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * A run's rollback starting (ROLLING_BACK, after what a finally part launched) and ending (ROLLED_BACK or
 * ROLLBACK_FAILED): the transitions the happy path's failures and the rollback path share. Each returns how its
 * commit ended.
 */
final class Rollbacks {
    private final Commits commits;

    Rollbacks(Commits commits) {
        this.commits = commits;
    }

    /**
     * Records ROLLING_BACK for a run whose step (or child-failure handling, or give-up) failed in this transaction,
     * then either finishes it at once (nothing was completed) or moves it to the rollback path.
     *
     * @param finallyDone the index of a step whose finally part ran in this transaction, or null
     * @return how the transaction ended (continuing at once when the rollback does)
     */
    StepEnd start(Connection c, ClaimedRun run, Saga<?> saga, String step, Failure failure,
            Integer finallyDone) throws SQLException {
        return startAfterFinally(c, run, saga, step, failure,
                finallyDone == null ? null : new FinallyRan(finallyDone, null));
    }

    /** A finally part that ran in this transaction: its step's index, and what it launched (null: nothing). */
    record FinallyRan(int index, StepContextImpl<?> launched) {
    }

    /**
     * As {@link #start(Connection, ClaimedRun, Saga, String, Failure, Integer)}, after a finally part ran
     * in the failing transaction: what it launched is written now, and the rollback waits for it before it goes on
     * (those runs belong to no executed step, so they are not rolled back).
     */
    StepEnd startAfterFinally(Connection c, ClaimedRun run, Saga<?> saga, String step, Failure failure,
            FinallyRan finallyRan) throws SQLException {
        String json = failure.toJson();
        List<LogEntry> entries = new ArrayList<>(2);
        entries.add(new LogEntry(EventType.ROLLING_BACK, step, json));
        Integer finallyDone = finallyRan == null ? null : finallyRan.index();
        List<String> woken = new ArrayList<>();
        int launched = finallyRan == null
                ? 0
                : emitFinally(c, run, saga, finallyRan.launched(), run.stepsDone(), woken);
        int seq = run.stepsDone() - 1;
        if (seq < 0 && launched == 0) {
            return finish(c, run, entries, InstanceNames.rollbackOf(saga.steps().getFirst().name()), json, finallyDone);
        }
        Advance next = Advance.from(run).rollingBack(seq, seq < 0 ? FINISH : "CHILDREN", json, launched)
                .failure(json);
        if (launched > 0) {
            next.status(RunStatus.WAITING);
        }
        if (finallyDone != null) {
            next.finallyDone(finallyDone);
        }
        return commits.commit(c, run, entries, next, woken);
    }

    /**
     * The rollback stage of a run that only waits for what a finally part launched during its rollback, and then
     * ends ROLLED_BACK (or ROLLBACK_FAILED, as {@link #finish} decides).
     */
    static final String FINISH = "FINISH";

    /**
     * Writes what a finally part launched, in this run's scope (as children of step instance {@code parentSeq}) and
     * on the global scope; wakes nothing before the commit. The finally part runs as the run starts or goes on with
     * its rollback, so what it launched in the scope is work of the rollback: the cancellation the rollback answers
     * does not reach it.
     *
     * @return how many runs in this run's scope were created (to wait for)
     */
    int emitFinally(Connection c, ClaimedRun run, Saga<?> saga, StepContextImpl<?> part, int parentSeq,
            Collection<String> woken) throws SQLException {
        if (part == null) {
            return 0;
        }
        return part.launches.write(c, new StepLaunches.Origin(run, saga.name(), part.step(), parentSeq, true),
                woken);
    }

    /**
     * Ends a rollback: ROLLED_BACK, unless the rollback was caused by runs whose own rollback failed (an unhandled
     * {@link dev.coop.failure.ChildRollbackFailedException}): then part of the tree could not be undone, and the run
     * ends ROLLBACK_FAILED so that its parent, and the outcome, say so.
     */
    StepEnd finish(Connection c, ClaimedRun run, List<LogEntry> entries, String step, String cause, Integer finallyDone)
            throws SQLException {
        boolean childRollbackFailed = dev.coop.failure.ChildRollbackFailedException.TYPE
                .equals(Failure.fromJson(cause).type());
        if (childRollbackFailed) {
            entries.add(new LogEntry(EventType.ROLLBACK_FAILED, step, cause));
        } else {
            entries.add(LogEntry.of(EventType.ROLLED_BACK, step));
        }
        Advance next = Advance.from(run).rollingBack(-1, null, cause, 0)
                .status(childRollbackFailed ? RunStatus.ROLLBACK_FAILED : RunStatus.ROLLED_BACK).failure(cause);
        if (finallyDone != null) {
            next.finallyDone(finallyDone);
        }
        return commits.commit(c, run, entries, next);
    }
}
