package dev.coop.internal.step;

import dev.coop.internal.store.Tx;
import dev.coop.internal.store.ClaimedRun;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lets a round's slow step leave the round, so that it holds up neither the steps that finished before it nor the
 * runs claimed after it. When the round's budget is spent while a step still runs and has not used its connection
 * (so nothing of it is in the transaction yet), the worker, which waits for the step ({@link SupervisedCall}), commits
 * the round without it: the finished steps' advances go as they would have, the runs not started are let go (and
 * woken, for this engine's other workers), and the slow step's run is held ({@code reserved_until}, as a continuing
 * run is) so that no claim takes it in the gap. A new transaction then locks the run again by id and version, and the
 * step goes on alone in it, committed as a run claimed alone; a worker is started in this one's place meanwhile
 * (at most one per worker of the engine, see {@link Dispatcher#replaceWorker()}). The step's first use of its
 * connection waits while the round commits.
 *
 * <p>When the run cannot be locked again (another transaction moved it on, or still holds its lock when the hold is
 * about to lapse), the step's outcome is discarded: its connection is revoked, its thread interrupted, and the run
 * left to whoever holds it; the step never committed, so running it again is allowed. A crash in between leaves the
 * run held until the hold lapses ({@link #HOLD_MILLIS}), then another engine runs the step again.
 *
 * <p>The hold is not renewed: it only bridges the gap until the reclaim, whose transaction then holds the run's row
 * lock for as long as the step runs, which every claim skips. A crash ends that transaction (the run is then free once
 * the hold lapsed), and so does the transaction's idle timeout; either way nothing of the step commits (tests:
 * DetachedStepTest, DetachedStepKillTest).
 */
final class RoundSplit {
    private static final Logger log = LoggerFactory.getLogger(RoundSplit.class);
    /** How long a slow step's run is held between the round's commit and its reclaim. */
    static final int HOLD_MILLIS = 2_000;
    /** How many times the reclaim waits for a lock that a skipping claim still holds. */
    private static final int RECLAIM_TRIES = 5;

    /** What {@link #split} did. */
    enum Outcome {
        /** Nothing yet: the step used its connection (or the engine stops); the worker waits for the step. */
        STAYED,
        /** The round committed without the step, whose run was locked again: it goes on alone. */
        LEFT,
        /** The round committed without the step, whose run could not be locked again: its outcome is discarded. */
        LOST
    }

    private final EngineContext engine;
    private final Connection connection;
    private final StepRound round;
    private final String saga;
    private final List<ClaimedRun> runs;
    private final Runnable replaceWorker;
    /** The run whose step executes now, how many runs started (it included), how many stay runnable now. */
    private ClaimedRun current;
    private int executed;
    private int again;
    private Runnable leave;
    /** Whether the current step used its connection (then it stays in the round). */
    private boolean touched;
    private boolean split;

    RoundSplit(EngineContext engine, Connection connection, StepRound round, String saga, List<ClaimedRun> runs,
            Runnable replaceWorker) {
        this.engine = engine;
        this.connection = connection;
        this.round = round;
        this.saga = saga;
        this.runs = runs;
        this.replaceWorker = replaceWorker;
    }

    /**
     * The next run's step starts (worker thread).
     *
     * @param leave makes the run's transaction its own, no longer the round's
     */
    synchronized void starting(ClaimedRun run, int executed, int again, Runnable leave) {
        this.current = run;
        this.executed = executed;
        this.again = again;
        this.leave = leave;
        this.touched = false;
    }

    /** Whether the round committed without its current step. */
    synchronized boolean happened() {
        return split;
    }

    /** Whether the round's time is up, and the step may still leave it. */
    synchronized boolean due() {
        return !split && !touched && round.budgetSpent() && !engine.dispatcher().stopped();
    }

    /** Whether the step may still leave the round (it did not use its connection yet). */
    synchronized boolean open() {
        return !split && !touched;
    }

    /**
     * The step is about to use its connection (step thread): in the round, the deferred advances are sent first
     * ({@link StepRound#firstUse}); after the split, there is nothing to send. Waits while the round commits.
     */
    synchronized void firstUse() throws SQLException {
        touched = true;
        if (!split) {
            round.firstUse();
        }
    }

    /**
     * The budget is spent and the current step still runs (worker thread): commits the round without it, unless it
     * used its connection. A failure of the commit aborts the round ({@link RoundAborted}): nothing of it is kept.
     */
    synchronized Outcome split(StepContextImpl<?> context) {
        if (split || touched) {
            return Outcome.STAYED;
        }
        int unstarted = runs.size() - executed;
        try {
            engine.store().hold(connection, current.id(), HOLD_MILLIS);
            round.commit();
        } catch (SQLException e) {
            throw new RoundAborted(e);
        }
        split = true;
        leave.run();
        engine.dispatcher().wake(saga, again + unstarted);
        engine.listeners().roundCommitted(saga, runs.size(), executed - 1);
        replaceWorker.run();
        log.debug("Engine {}: step of run {} (saga {}) ran past its round's budget; committed the round without it,"
                + " {} runs let go", engine.engineId(), current.id(), saga, unstarted);
        try {
            for (int i = 0; i < RECLAIM_TRIES; i++) {
                ClaimedRun again = engine.store().reclaimHeld(connection, current, engine.engineId());
                if (again != null) {
                    context.reclaimed = withXact(current, again.xact());
                    return Outcome.LEFT;
                }
            }
            connection.rollback();
        } catch (SQLException e) {
            log.warn("Engine {}: could not lock run {} (saga {}) again after its round committed ({}); its step's"
                    + " outcome is discarded", engine.engineId(), current.id(), saga, e.toString());
            Tx.rollbackQuietly(connection);
        }
        context.lost = true;
        return Outcome.LOST;
    }

    /** {@code run} as locked again by another transaction: only the transaction id differs. */
    static ClaimedRun withXact(ClaimedRun r, String xact) {
        return new ClaimedRun(r.id(), r.saga(), r.sagaVersion(), r.messageId(), r.lineage(), r.parentId(),
                r.rollback(), r.stepIndex(), r.nextStep(), r.stepsDone(), r.history(), r.attempt(), r.started(),
                r.failedChildren(), r.rollbackSeq(), r.rollbackStage(), r.rollbackCause(), r.resolution(),
                r.retries(), r.version(), r.context(), r.parentContext(), r.finallyDone(), r.pendingChildren(),
                r.awaited(), r.waitingSince(), r.cancellation(), r.topic(), r.payload(), r.messageCreatedAt(),
                r.claimedAt(), xact, r.runnableAt(), r.cancelFrom(), r.orderingKey());
    }
}
