package dev.coop.internal.step;

import dev.coop.internal.store.Tx;
import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Time;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes a round: one step of each run a claim took at once, one after another on the claim's connection, then
 * one commit for all of them. Each run's transaction is the one it would have alone (the same statements, its step
 * behind its own savepoint, taken when the step first uses its connection), except that it does not commit: a step
 * that fails rolls back to its savepoint and fails only its run. What only a rollback of the whole transaction can
 * undo aborts the round: nothing of it is kept, and its runs are executed again one run per transaction.
 */
final class ExecuteRound {
    private static final Logger log = LoggerFactory.getLogger(ExecuteRound.class);

    private final EngineContext engine;
    private final StepExecutor executor;
    private final LongSupplier nanos;
    /** Starts a worker in this one's place when a slow step leaves its round ({@link RoundSplit}). */
    private final Runnable replaceWorker;

    /**
     * The order a round executes its runs in: by parent. A run that finishes counts itself off at its parent, locking
     * the parent's row until the round commits; in this order every round locks parents in the same order, so that two
     * rounds finishing children of the same parents cannot deadlock on them. Runs without a parent go first.
     */
    private static final java.util.Comparator<ClaimedRun> BY_PARENT = java.util.Comparator.comparing(
            ClaimedRun::parentId, java.util.Comparator.nullsFirst(java.util.Comparator.naturalOrder()));

    ExecuteRound(EngineContext engine, StepExecutor executor, Runnable replaceWorker) {
        this.engine = engine;
        this.executor = executor;
        this.replaceWorker = replaceWorker;
        this.nanos = clockOf(engine.store().time());
    }

    /**
     * @param runs the runs the claim locked (more than one), in the order they were due
     * @param working told which run executes now (for the worker's shutdown report)
     */
    void execute(Connection c, String saga, List<ClaimedRun> claimed, Consumer<String> working)
            throws SQLException {
        List<ClaimedRun> runs = new java.util.ArrayList<>(claimed);
        runs.sort(BY_PARENT);
        StepRound round = new StepRound(engine, c, nanos, runs);
        RoundSplit split = new RoundSplit(engine, c, round, saga, runs, replaceWorker);
        round.split(split);
        Ran ran = runSteps(c, round, runs, split, working);
        if (ran.aborted() != null) {
            aborted(c, saga, runs, ran.aborted(), working);
            return;
        }
        if (split.happened()) { // committed without its slow step, which then committed alone
            engine.dispatcher().wake(saga, ran.again());
            return;
        }
        try {
            round.commit();
        } catch (SQLException e) {
            if (c.isClosed()) {
                throw e;
            }
            aborted(c, saga, runs, new RoundAborted(e), working); // a deferred advance failed
            return;
        }
        engine.dispatcher().wake(saga, ran.again() + runs.size() - ran.executed()); // runnable now, or not started
        engine.listeners().roundCommitted(saga, runs.size(), ran.executed());
    }

    /** What executing a round's steps did: how many ran, how many left their run runnable now, or why it aborted. */
    private record Ran(int executed, int again, RoundAborted aborted) {
    }

    /**
     * Executes one transaction of each run, in order, until the round's time is up or the engine stops, or a slow
     * step left the round (then {@code again} says whether that step's run is runnable now).
     */
    private Ran runSteps(Connection c, StepRound round, List<ClaimedRun> runs, RoundSplit split,
            Consumer<String> working) throws SQLException {
        int executed = 0;
        int again = 0;
        round.enter();
        try {
            for (ClaimedRun run : runs) {
                if (executed > 0 && (round.budgetSpent() || round.shareEnded() || engine.dispatcher().stopped())) {
                    break; // the rest are released unexecuted by the commit
                }
                working.accept("run " + run.id() + " (saga " + run.saga() + ", in a round of " + runs.size() + ")");
                executed++;
                round.startRun();
                split.starting(run, executed, again, executor::leaveRound);
                boolean runnable = executor.executeInRound(c, run, round);
                if (split.happened()) {
                    return new Ran(executed, runnable ? 1 : 0, null);
                }
                if (runnable) {
                    again++;
                }
            }
            return new Ran(executed, again, null);
        } catch (RoundAborted e) {
            return new Ran(executed, again, e);
        } finally {
            round.leave(); // before the runs go alone: nothing of this round may reach their transactions
        }
    }

    private void aborted(Connection c, String saga, List<ClaimedRun> runs, RoundAborted e, Consumer<String> working)
            throws SQLException {
        Tx.rollbackQuietly(c);
        log.debug("Engine {}: a round of {} runs of saga {} was rolled back ({}); executing them one by one",
                engine.engineId(), runs.size(), saga, e.getCause().toString());
        executeAlone(c, saga, runs, e, working);
    }

    /**
     * The runs of an aborted round, each in a transaction of its own (locked again unless another engine moved it
     * meanwhile), so that one run whose trouble only a rollback undoes cannot keep the others from advancing.
     */
    private void executeAlone(Connection c, String saga, List<ClaimedRun> runs, RoundAborted aborted,
            Consumer<String> working) throws SQLException {
        for (ClaimedRun claimed : runs) {
            if (engine.dispatcher().stopped()) {
                return; // closing: left to the next engine
            }
            if (aborted.causedBy(claimed.id())) {
                if (aborted.settle(c).continueNow()) {
                    engine.dispatcher().wake(saga, 1);
                }
                continue;
            }
            ClaimedRun run = engine.store().reclaim(c, claimed.rootId(), claimed.id(), saga, engine.engineId());
            if (run == null) {
                c.commit();
                continue;
            }
            working.accept("run " + run.id() + " (saga " + run.saga() + ")");
            if (executor.execute(c, run, false).continueNow()) {
                engine.dispatcher().wake(saga, 1);
            }
        }
    }

    /** What a round's budget is measured with: the engine's time source when it has one, else the JVM's clock. */
    private static LongSupplier clockOf(Time time) {
        if (!time.controlled()) {
            return System::nanoTime;
        }
        return () -> {
            Instant now = time.bind().toInstant();
            return now.getEpochSecond() * 1_000_000_000L + now.getNano();
        };
    }
}
