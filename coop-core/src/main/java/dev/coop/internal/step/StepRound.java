package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Advance;
import dev.coop.RunStatus;
import dev.coop.internal.join.JoinBook;
import dev.coop.internal.store.Counted;
import dev.coop.internal.store.CountedOff;
import dev.coop.internal.store.Store;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.function.LongSupplier;

/**
 * One transaction that advances several runs of a saga by one step each: the advances it defers, what waits for its
 * commit (wake-ups and completions that would otherwise follow each run's own commit), and its time budget.
 *
 * <p>The advance of a run that stays runnable now waits, and goes with the others' and the COMMIT in one round trip.
 * So does the advance of a run that finishes, with the count-off at its parent when it has one: the count-offs of a
 * round's children of one parent are one update of the parent (the COMMIT then follows in a round trip of its own,
 * after a parent committed by its children is counted off at its own parent).
 * It is sent earlier when a later step uses its connection: user code runs only after every step before it is
 * written whole, so that whatever it does to the transaction (even ending it by a route the guard cannot see)
 * never commits a step's writes without its advance. Steps run one after another; once the budget is spent no further
 * step starts, and the runs claimed but not started are released unexecuted by the commit.
 */
final class StepRound {
    /** How long a round keeps starting steps; the first step always runs. */
    static final long BUDGET_NANOS = 20_000_000L;
    /** The round the current thread executes, if any (user code reaches it through the step's connection). */
    private static final ThreadLocal<StepRound> CURRENT = new ThreadLocal<>();

    private final EngineContext engine;
    private final Connection connection;
    private final LongSupplier nanos;
    private final long start;
    /** The ids of the round's runs. */
    private final Set<UUID> runs;
    private final List<Store.Move> deferred = new ArrayList<>();
    /** Whether a deferred advance finished a run that counts off at its parent. */
    private boolean countsOff;
    /**
     * The messages of the runs whose deferred advances finished them, and of the parents their count-offs committed:
     * the commit checks their join memberships.
     */
    private final List<UUID> finished = new ArrayList<>();
    private final List<Runnable> afterCommit = new ArrayList<>();
    /** Whether user code of the current run used the connection (then its advance is not deferred). */
    private boolean touched;
    /**
     * Whether a step left the transaction holding what only its end lets go (transaction-level advisory locks; see
     * {@link dev.coop.internal.guard.SessionReset}): no other run's step may start in it.
     */
    private boolean shareEnded;
    /** Why sending the deferred advances failed (the round must be rolled back), or null. */
    private SQLException broken;
    /** How a slow step leaves this round ({@link RoundSplit}), or null. */
    private RoundSplit split;

    /**
     * @param nanos the clock the budget is measured with (the engine's time source when it has one)
     * @param runs the round's runs
     */
    StepRound(EngineContext engine, Connection connection, LongSupplier nanos, List<ClaimedRun> runs) {
        this.engine = engine;
        this.runs = Set.copyOf(runs.stream().map(ClaimedRun::id).toList());
        this.connection = connection;
        this.nanos = nanos;
        this.start = nanos.getAsLong();
    }

    /** Makes this the current thread's round until {@link #leave()}. */
    void enter() {
        CURRENT.set(this);
    }

    void leave() {
        CURRENT.remove();
    }

    /** How a slow step of this round leaves it. */
    void split(RoundSplit split) {
        this.split = split;
    }

    RoundSplit split() {
        return split;
    }

    /** The current thread's round, or null. */
    static StepRound current() {
        return CURRENT.get();
    }

    /** The next run's transaction begins. */
    void startRun() {
        touched = false;
    }

    /**
     * User code of the current run is about to use the connection: the deferred advances are sent first. Its own
     * advance will not be deferred: it checks at once that the transaction is still the round's.
     */
    void firstUse() throws SQLException {
        touched = true;
        flush();
    }

    /**
     * Whether the advance of the current run may wait: no user code of the run used the connection (so none could
     * have ended the transaction, which the advance checks), and the advance leaves the run runnable now or finishes
     * it. Not a count-off at a parent that is a run of this round (its own advance in the round would come first).
     */
    boolean mayDefer(ClaimedRun run, Advance next) {
        if (touched) {
            return false;
        }
        if (next.status().isFinished()) {
            return !(countsOff(run) && runs.contains(run.parentId())) && next.runnableAt() == null
                    && next.delayMillis() == 0;
        }
        return next.isQuietAlone();
    }

    /** Whether {@code run}, finishing, counts off at its parent. */
    private static boolean countsOff(ClaimedRun run) {
        return run.parentId() != null && run.awaited();
    }

    /** Writes {@code move} (an advance {@link #mayDefer} allowed) later, with the others. */
    void defer(Store.Move move) {
        deferred.add(move);
        if (move.next().status().isFinished()) {
            finished.add(move.run().messageId());
            countsOff |= countsOff(move.run());
        }
    }

    /** Whether advances wait to be sent. */
    boolean hasDeferred() {
        return !deferred.isEmpty();
    }

    /** Sends the deferred advances now (before user code uses the connection). */
    void flush() throws SQLException {
        if (deferred.isEmpty()) {
            return;
        }
        try {
            if (countsOff) {
                List<CountedOff> parents = engine.store().advanceAllCountingOff(connection, engine.engineId(),
                        deferred);
                deferred.clear();
                countsOff = false;
                countedOff(parents);
            } else {
                engine.store().advanceAll(connection, engine.engineId(), deferred, false, finished);
                deferred.clear();
            }
        } catch (SQLException e) {
            broken = e;
            throw e;
        }
    }

    /** Aborts the round when sending its deferred advances failed (whatever the user code did with that error). */
    void checkBroken() {
        if (broken != null) {
            throw new RoundAborted(broken);
        }
    }

    /**
     * The parents the deferred count-offs counted off at: a parent that committed is counted off at its own parent,
     * and so on up, a level at a time, each level's parents counted off in id order (so two rounds lock them in one
     * order); each committed level's messages are then checked for join memberships. A parent that became runnable is
     * woken once the round committed.
     */
    private void countedOff(List<CountedOff> parents) throws SQLException {
        List<Counted> level = new ArrayList<>(parents.stream().map(CountedOff::parent).toList());
        java.util.Map<UUID, OffsetDateTime> startedAt = new java.util.HashMap<>();
        parents.forEach(off -> startedAt.put(off.parent().id(), off.startedAt()));
        while (!level.isEmpty()) {
            List<Counted> committed = new ArrayList<>();
            for (Counted parent : level) {
                if (parent.status() == RunStatus.COMMITTED) {
                    committedHere(parent);
                    if (parent.parentId() != null) {
                        committed.add(parent);
                    }
                } else if (parent.status() == RunStatus.RUNNABLE) {
                    String saga = parent.saga();
                    afterCommit(() -> engine.dispatcher().wake(saga, 1)); // exactly one run: its claim is owed
                }
            }
            committed.sort(Comparator.comparing(Counted::parentId));
            level = new ArrayList<>();
            for (Counted child : committed) {
                OffsetDateTime started = startedAt.get(child.id());
                Counted above = engine.store().countOff(connection, child,
                        RunStatus.COMMITTED,
                        engine.engineId(), started);
                if (above != null) {
                    startedAt.put(above.id(), started);
                    level.add(above);
                }
            }
        }
    }

    /** A parent the round's count-offs committed: its join memberships are checked, its completion told. */
    private void committedHere(Counted parent) {
        finished.add(parent.messageId());
        afterCommit(() -> engine.completions().finished(parent.messageId(), parent.saga(), RunStatus.COMMITTED));
    }

    /**
     * Sends the deferred advances and the COMMIT, which waits for the check that no message of a finished run is a
     * pending join member (when one is, the memberships are settled first); then runs what waited for the commit.
     * Count-offs go first, in a round trip of their own: a parent they commit is counted off at its own parent, and
     * checked, before the COMMIT.
     */
    void commit() throws SQLException {
        if (countsOff) {
            flush();
        }
        Set<String> joined = Set.of();
        boolean committed = false;
        if (!deferred.isEmpty()) {
            committed = engine.store().advanceAll(connection, engine.engineId(), deferred, true, finished);
            deferred.clear();
        } else if (!finished.isEmpty()) {
            committed = engine.store().commitUnlessJoined(connection, finished);
        }
        if (!committed) {
            if (!finished.isEmpty()) {
                joined = new JoinBook(engine.store(), engine.json())
                        .runsFinished(connection, finished.getFirst(), finished.subList(1, finished.size()));
            }
            connection.commit();
        }
        finished.clear();
        afterCommit.forEach(Runnable::run);
        afterCommit.clear();
        joined.forEach(engine.dispatcher()::wake);
    }

    void afterCommit(Runnable action) {
        afterCommit.add(action);
    }

    /**
     * The current run's step left the transaction what no reset undoes: the round commits after this run, and the
     * runs not started are released to be claimed again.
     */
    void endShare() {
        shareEnded = true;
    }

    /** Whether no further step may start in this transaction ({@link #endShare()}). */
    boolean shareEnded() {
        return shareEnded;
    }

    /** Whether the round's time is up: no further step starts in it. */
    boolean budgetSpent() {
        return nanos.getAsLong() - start >= BUDGET_NANOS;
    }
}
