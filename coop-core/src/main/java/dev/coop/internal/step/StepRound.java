package dev.coop.internal.step;

import dev.coop.internal.store.Store;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * One transaction that advances several runs of a saga by one step each: the advances it defers, what waits for its
 * commit (wake-ups and completions that would otherwise follow each run's own commit), and its time budget.
 *
 * <p>The advance of a run that stays runnable now waits, and goes with the others' and the COMMIT in one round trip.
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
    private final List<Store.Move> deferred = new ArrayList<>();
    private final List<Runnable> afterCommit = new ArrayList<>();
    /** Whether user code of the current run used the connection (then its advance is not deferred). */
    private boolean touched;
    /** Why sending the deferred advances failed (the round must be rolled back), or null. */
    private SQLException broken;

    /** @param nanos the clock the budget is measured with (the engine's time source when it has one) */
    StepRound(EngineContext engine, Connection connection, LongSupplier nanos) {
        this.engine = engine;
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
     * Whether the advance of the current run may wait: it leaves the run runnable now, and no user code of the run
     * used the connection (so none could have ended the transaction, which the advance checks).
     */
    boolean mayDefer(Advance next) {
        return !touched && next.isQuietAlone();
    }

    /** Writes {@code move} (an advance that leaves its run runnable now) later, with the others. */
    void defer(Store.Move move) {
        deferred.add(move);
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
            engine.store().advanceAll(connection, engine.engineId(), deferred, false);
            deferred.clear();
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

    /** Sends the deferred advances and the COMMIT; then runs what waited for it. */
    void commit() throws SQLException {
        if (deferred.isEmpty()) {
            connection.commit();
        } else {
            engine.store().advanceAll(connection, engine.engineId(), deferred, true);
            deferred.clear();
        }
        afterCommit.forEach(Runnable::run);
        afterCommit.clear();
    }

    void afterCommit(Runnable action) {
        afterCommit.add(action);
    }

    /** Whether the round's time is up: no further step starts in it. */
    boolean budgetSpent() {
        return nanos.getAsLong() - start >= BUDGET_NANOS;
    }
}
