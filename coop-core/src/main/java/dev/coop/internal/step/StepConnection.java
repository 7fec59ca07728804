package dev.coop.internal.step;

import dev.coop.internal.guard.GuardedConnection;
import dev.coop.internal.guard.SessionReset;
import dev.coop.internal.store.ClaimSql;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * The connection a part (step, compensation, handler, finally part) runs with, under its guard: what user code is
 * handed, what it was refused, and what Coop does to the connection around the code (a reset of its session, an
 * undo of its writes, an abort when the code is stuck). What the part launches and sets is its
 * {@link StepContextImpl}'s.
 */
final class StepConnection {
    private final GuardedConnection.Guard guard;
    private final EngineContext engine;

    StepConnection(Connection connection, EngineContext engine) {
        this.guard = GuardedConnection.wrap(connection);
        this.engine = engine;
    }

    /** The guard, for the parts of a context that read through the connection handed out. */
    GuardedConnection.Guard guard() {
        return guard;
    }

    /** The connection handed to user code. */
    Connection handedOut() {
        return guard.connection();
    }

    /** Runs {@code action} before the step first uses its connection (see {@link GuardedConnection.Guard}). */
    void beforeFirstUse(GuardedConnection.FirstUse action) {
        guard.beforeFirstUse(action);
    }

    /** The step's connection itself, under the guard (for Coop's settings around user code). */
    Connection raw() {
        return guard.target();
    }

    /** Whether the part was refused a statement that would have ended its transaction. */
    boolean refused() {
        return guard.refusal() != null;
    }

    /**
     * What the part threw, or the statement it was refused when it caught that refusal (or threw something else
     * after it): a part that tried to end its transaction fails.
     */
    Throwable withRefusal(Throwable thrown) {
        Exception refusal = guard.refusal();
        if (refusal == null || thrown == refusal) {
            return thrown;
        }
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable t = thrown; t != null && seen.size() < 100 && seen.add(t); t = t.getCause()) {
            if (t == refusal) {
                return thrown; // it carries the refusal (a framework's translation of it, say)
            }
        }
        if (thrown != null) {
            refusal.addSuppressed(thrown);
        }
        return refusal;
    }

    /**
     * The connection refuses every further use; a statement in flight is cancelled and waited for {@code graceNanos}
     * at most.
     *
     * @return whether no statement of the step is in flight any more
     */
    boolean revoke(long graceNanos) {
        return guard.revoke(graceNanos);
    }

    /** The step's code is stuck in a statement on its connection: the connection is aborted (its transaction dies). */
    void abort() {
        try {
            guard.target().abort(Runnable::run);
        } catch (SQLException | RuntimeException e) {
            // already gone
        }
    }

    /** The connection handed out can no longer be used. */
    void close() {
        guard.close();
    }

    /** Undoes the part's writes back to its savepoint, keeping the transaction, then resets the session. */
    void discardWrites() throws SQLException {
        try {
            guard.discardWrites();
        } catch (SQLException e) {
            if (guard.used()) {
                SessionReset.failed(); // the session is in a state nobody knows
            }
            throw e;
        }
        resetSession(); // what the rollback to the savepoint does not undo (session locks, SQL PREPARE)
    }

    /**
     * After user code that used the connection: gives it back as Coop had it ({@link SessionReset}), before Coop's
     * own statements; in a round, a step whose SQL took transaction-level advisory locks ends the round's shared part.
     * Nothing when the code did not use the connection.
     *
     * @throws SQLException when the reset failed (the code left its transaction unusable, say), or the code made its
     *         transaction read-only (SQLSTATE 25006): the part fails
     */
    void resetSession() throws SQLException {
        if (!guard.used()) {
            return;
        }
        boolean readOnly;
        try {
            readOnly = engine.store().sessionReset().reset(guard.target(), ClaimSql.RUNNING_AS + engine.engineId());
        } catch (SQLException e) {
            SessionReset.failed();
            throw e;
        }
        SessionReset.succeeded();
        if (readOnly) { // undone with the step's writes, back to its savepoint: the failure can then be written
            throw new SQLException("The step made its transaction read-only (SET TRANSACTION READ ONLY), so it"
                    + " cannot be committed: Coop writes the step's log rows and its run's advance in that"
                    + " transaction", "25006");
        }
        StepRound round = StepRound.current();
        if (guard.tookTransactionLocks() && round != null) {
            round.endShare();
        }
    }
}
