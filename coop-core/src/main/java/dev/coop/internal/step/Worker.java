package dev.coop.internal.step;

import dev.coop.internal.store.Tx;
import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.guard.ConnectionEviction;
import dev.coop.internal.guard.NetworkTimeouts;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Due;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One engine thread: takes a task from the dispatcher, claims a run and executes steps, continuing a run at once
 * on the same connection when its step emitted nothing. Holds a connection only while it works.
 */
public final class Worker implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);
    /** How many steps of one run a worker executes in a row before giving other runs a turn. */
    private static final int MAX_CONTINUATIONS = 64;
    /** How soon a limited saga whose claim found nothing is tried again at the latest (slots held elsewhere). */
    private static final long LIMIT_RETRY_MILLIS = 50;
    /** The soonest a rate-limited saga is tried again (its oldest tokens may be held by steps still running). */
    private static final long RATE_RETRY_MIN_MILLIS = 10;

    private final EngineContext engine;
    private final StepExecutor executor;
    private final ExecuteRound rounds;
    private int consecutiveFailures;
    /** The database session of the connection this worker holds, and the run it executes; for shutdown. */
    private volatile int backendPid;
    private volatile String working;
    /**
     * Whether another worker took this one's place while it stays with a slow step that left its round
     * ({@link RoundSplit}): it ends after its task.
     */
    private volatile boolean retired;
    /** Since when ({@link System#nanoTime()}, never 0) this worker needs a connection and got none; 0: not. */
    private volatile long starvedSince;

    public Worker(EngineContext engine) {
        this.engine = engine;
        this.executor = new StepExecutor(engine);
        this.rounds = new ExecuteRound(engine, executor, this::replaced);
    }

    @Override
    public void run() {
        Dispatcher dispatcher = engine.dispatcher();
        try {
            loop(dispatcher);
        } finally {
            if (retired) {
                dispatcher.workerRetired();
            }
        }
    }

    /** A slow step of this worker's round left it: a worker is started in this one's place, if the engine may. */
    private void replaced() {
        if (!retired && engine.dispatcher().replaceWorker()) {
            retired = true;
        }
    }

    private void loop(Dispatcher dispatcher) {
        while (!dispatcher.stopped() && !retired) {
            Dispatcher.Task task;
            try {
                task = dispatcher.next();
            } catch (InterruptedException e) {
                continue; // only a shutdown that ran out of time interrupts workers; the loop condition sees it
            }
            if (task == null) {
                return;
            }
            boolean released = false;
            try {
                if (task.isProbe()) {
                    probe();
                } else {
                    work(task);
                }
                consecutiveFailures = 0;
            } catch (Throwable e) { // an Error too: this thread lives on, and says so loudly
                if (task.isProbe()) {
                    dispatcher.probeFailed(backoffNanos());
                }
                dispatcher.done(task); // before backing off: the saga's worker slot is free meanwhile
                released = true;
                backOff(task, e);
                if (!task.isProbe()) {
                    // what the task was owed is owed still (nothing of its transaction committed, or a step did and
                    // its run's continuation did not): searched, so that no due run waits for the next poll
                    dispatcher.wake(task.saga());
                }
            } finally {
                if (!released) {
                    dispatcher.done(task);
                }
            }
        }
    }

    private void probe() throws SQLException {
        Map<String, Due> due;
        try (Connection c = connection()) {
            int own = NetworkTimeouts.bound(c, engine.databaseTimeoutMillis());
            try {
                due = engine.store().probe(c, engine.sagas());
                // limits are part of a saga's definition, kept in the registry: follow what the last engine registered
                engine.store().limited(engine.limits().limited(c, engine.sagas().names()));
            } catch (Throwable e) {
                ConnectionEviction.ifNeeded(c, engine.engineId(), e);
                throw e;
            } finally {
                NetworkTimeouts.set(c, own);
            }
        }
        engine.dispatcher().probed(due);
    }

    private void work(Dispatcher.Task task) throws SQLException {
        try (Connection c = connection()) {
            int own = NetworkTimeouts.bound(c, engine.databaseTimeoutMillis());
            NetworkTimeouts.stepConnection(own, engine.databaseTimeoutMillis());
            c.setAutoCommit(false);
            Throwable failed = null;
            try {
                engine.store().refillLease(c, task.saga()); // rate tokens ahead, in a transaction of their own
                List<ClaimedRun> runs = claim(c, task);
                if (runs.isEmpty()) {
                    String refusal = commitEmptyClaim(c, task.saga());
                    engine.dispatcher().empty(task);
                    limitReached(task.saga(), refusal);
                    return;
                }
                executeClaimed(c, task, runs);
            } catch (Throwable e) {
                failed = e;
                Tx.rollbackQuietly(c);
                throw e;
            } finally {
                working = null;
                // Turning auto-commit back on commits an open transaction: whatever happened above (an Error
                // thrown between a step's writes and its bookkeeping, say), nothing may commit half a step.
                Tx.rollbackQuietly(c);
                SQLException restoring = Tx.autoCommitBack(c, failed);
                NetworkTimeouts.noStepConnection();
                NetworkTimeouts.set(c, own);
                ConnectionEviction.ifNeeded(c, engine.engineId(), failed); // before the pool gets it back
                if (restoring != null) {
                    throw restoring;
                }
            }
        }
    }

    /** Executes the runs a task claimed: several in a round, or one alone with its continuations. */
    private void executeClaimed(Connection c, Dispatcher.Task task, List<ClaimedRun> runs) throws SQLException {
        if (engine.dispatcher().stopped()) {
            c.rollback(); // closing: leave the runs to the next engine
            return;
        }
        engine.dispatcher().found(task);
        if (!engine.listeners().isEmpty()) {
            runs.forEach(this::claimed);
        }
        backendPid = backendPid(c);
        if (runs.size() > 1) {
            rounds.execute(c, task.saga(), runs, w -> working = w);
            return;
        }
        executeAlone(c, runs.getFirst());
    }

    /**
     * Executes a run claimed alone, continuing it at once on the same connection while its steps leave it runnable
     * (up to {@link #MAX_CONTINUATIONS} steps), each step in a transaction of its own.
     */
    private void executeAlone(Connection c, ClaimedRun first) throws SQLException {
        ClaimedRun run = first;
        for (int steps = 1; run != null; steps++) {
            working = "run " + run.id() + " (saga " + run.saga() + ")";
            boolean mayContinue = steps < MAX_CONTINUATIONS;
            StepEnd end = executor.execute(c, run, mayContinue);
            if (engine.store().isLimited(run.saga())) {
                engine.dispatcher().stepEnded(run.saga()); // a slot freed: sagas waiting for one try again
            }
            run = next(c, run, end, mayContinue);
        }
    }

    /** After a step of {@code run} ended as {@code end} says: the run locked again to continue it now, or null. */
    private ClaimedRun next(Connection c, ClaimedRun run, StepEnd end, boolean mayContinue) throws SQLException {
        boolean continueNow = end.continueNow();
        boolean reclaimed = end.reclaimTried();
        ClaimedRun again = end.reclaimed();
        UUID id = run.id();
        String saga = run.saga();
        if (continueNow && mayContinue && !engine.dispatcher().stopped()) {
            ClaimedRun next = reclaimed ? again : engine.store().reclaim(c, run.rootId(), id, saga, engine.engineId());
            if (next == null && reclaimed) { // a continuation's commit reserves its run for this worker
                // locked by a claim that skipped it: wait for it a moment (or a limited saga's limits refused it:
                // they refuse it again, and the run waits for a slot or a token as usual)
                next = engine.store().reclaimWaiting(c, run.rootId(), id, saga, engine.engineId());
            }
            if (next == null) { // taken by another worker, or refused by the saga's limits
                notContinued(c, run.rootId(), id, saga, reclaimed);
            }
            return next;
        }
        if (reclaimed) { // not continuing it here after all (stopping)
            c.rollback(); // lets go of the run (and of a limited saga's slot and token)
            if (again != null) {
                engine.store().release(c, run.rootId(), id); // reserved for this worker: others may claim it now
                c.commit();
                engine.dispatcher().wake(saga, 1);
            }
        } else if (continueNow) {
            engine.dispatcher().wake(saga, 1); // still runnable: back to the queue, fairly
        }
        return null;
    }

    /** A run to continue was taken by another worker or refused by its saga's limits. */
    private void notContinued(Connection c, UUID rootId, UUID id, String saga, boolean reserved)
            throws SQLException {
        if (reserved) {
            engine.store().release(c, rootId, id); // others may claim it now
            // or, when it is still locked, as soon as its reservation lapsed
            engine.dispatcher().dueIn(Store.RESERVATION_MILLIS);
        }
        String refusal = commitEmptyClaim(c, saga);
        if (refusal == null) {
            engine.dispatcher().giveBack(saga);
        }
        limitReached(saga, refusal);
    }

    /**
     * Claims the runs the task may take: up to {@code task.runs()} at once when the saga has no limits (a round),
     * else one ({@link #claim(Connection, String)}); for a limited saga, the claims owed for the other runs are owed
     * again, to workers that claim one each.
     */
    private List<ClaimedRun> claim(Connection c, Dispatcher.Task task) throws SQLException {
        String saga = task.saga();
        if (task.runs() > 1 && !engine.store().isLimited(saga)) {
            for (int version : engine.sagas().claimOrder(saga)) {
                List<ClaimedRun> runs = engine.store().claimRound(c, saga, version, engine.engineId(), task.runs());
                if (!runs.isEmpty()) {
                    engine.dispatcher().claimedRound(task, runs.size());
                    return runs;
                }
            }
            return List.of();
        }
        if (task.runs() > 1 && task.counted()) {
            engine.dispatcher().wake(saga, task.runs() - 1);
        }
        ClaimedRun run = claim(c, saga);
        return run == null ? List.of() : List.of(run);
    }

    /**
     * Claims a run of one of the versions of the saga this engine has (a turn each when it has several, so that
     * draining an old version does not starve the new one or the reverse); runs of other versions are left to the
     * engines that have them. One index probe per version tried.
     */
    private ClaimedRun claim(Connection c, String saga) throws SQLException {
        for (int version : engine.sagas().claimOrder(saga)) {
            ClaimedRun run = engine.store().claim(c, saga, version, engine.engineId());
            if (run != null) {
                return run;
            }
        }
        return null;
    }

    /**
     * A claim of a limited saga was refused by its limits (every slot busy, or the rate window full). The saga is
     * tried again when a step of it ends in this engine, when its next rate token frees, and after a short delay for
     * slots held by other engines (a probe: nothing here waits). A run waiting so stays runnable: no failure, no
     * retry counted.
     */
    private void limitReached(String saga, String refusal) {
        if (refusal == null) {
            return; // nothing was due (or another worker took it): nothing to try again
        }
        if (refusal.equals("lease")) { // the leased rate tokens ran out: lease anew, at once
            engine.store().leaseRanOut(saga);
            engine.dispatcher().wake(saga);
            return;
        }
        long wait = refusal.equals("slot")
                ? LIMIT_RETRY_MILLIS
                : Math.max(RATE_RETRY_MIN_MILLIS, Long.parseLong(refusal));
        engine.dispatcher().blocked(saga, wait);
    }

    /** Commits a claim that found nothing; for a limited saga, says whether its limits refused it (else null). */
    private String commitEmptyClaim(Connection c, String saga) throws SQLException {
        if (!engine.store().isLimited(saga)) {
            c.commit();
            return null;
        }
        return engine.limits().commitEmptyClaim(c);
    }

    /** Tells the listeners how long the run waited to be claimed, and for its children when it waited. */
    private void claimed(ClaimedRun run) {
        java.time.OffsetDateTime runnableAt = run.runnableAt();
        if (runnableAt != null) {
            engine.listeners().claimed(run.saga(), positive(runnableAt, run.claimedAt()));
        }
        if (run.waitingSince() != null && run.pendingChildren() == 0) {
            engine.listeners().barrierPassed(run.saga(), positive(run.waitingSince(), run.claimedAt()));
        }
    }

    private static java.time.Duration positive(java.time.OffsetDateTime from, java.time.OffsetDateTime to) {
        java.time.Duration d = java.time.Duration.between(from, to);
        return d.isNegative() ? java.time.Duration.ZERO : d;
    }

    private void backOff(Dispatcher.Task task, Throwable e) {
        consecutiveFailures++;
        if (Throwables.isInfrastructure(e)) {
            engine.listeners().databaseRetry(task.isProbe() ? null : task.saga(), e);
        }
        long nanos = backoffNanos();
        if (e instanceof Error) {
            log.error("Engine {} hit {} while it tried to {}; nothing of that transaction was committed, and this"
                    + " worker goes on", engine.engineId(), e,
                    task.isProbe()
                            ? "look for work"
                            : "work on saga "
                                    + task.saga(),
                    e);
        }
        log.warn("Engine {} failed to {} ({}); pausing this worker for {} ms", engine.engineId(),
                task.isProbe() ? "look for work" : "work on saga " + task.saga(), e.toString(),
                TimeUnit.NANOSECONDS.toMillis(nanos));
        try {
            engine.dispatcher().pause(nanos);
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        }
    }

    private long backoffNanos() {
        long millis = Math.min(5_000, 50L << Math.min(consecutiveFailures, 7));
        return TimeUnit.MILLISECONDS
                .toNanos(millis / 2 + ThreadLocalRandom.current().nextLong(millis / 2 + 1));
    }

    /**
     * A connection for this worker's work; while it does not come (the pool is exhausted, the database unreachable),
     * the worker counts as starving ({@link dev.coop.internal.guard.ConnectionWatch}) until one does.
     */
    private Connection connection() throws SQLException {
        if (starvedSince == 0) {
            starvedSince = System.nanoTime() | 1;
        }
        Connection c = engine.dataSource().getConnection();
        starvedSince = 0;
        return c;
    }

    public long starvedSince() {
        return starvedSince;
    }

    public int backendPid() {
        return backendPid;
    }

    /** What this worker executes right now, or null. */
    public String working() {
        return working;
    }

    private static int backendPid(Connection c) {
        try {
            return c.unwrap(org.postgresql.PGConnection.class).getBackendPID(); // no round trip
        } catch (SQLException | RuntimeException e) {
            return 0;
        }
    }
}
