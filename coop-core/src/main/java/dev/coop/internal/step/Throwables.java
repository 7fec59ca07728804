package dev.coop.internal.step;

import dev.coop.internal.guard.GuardedConnection;
import dev.coop.internal.store.Store;

import dev.coop.failure.CooperationException;
import dev.coop.failure.Failure;
import dev.coop.failure.GaveUpException;
import java.util.List;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;

/** Tells Coop's own infrastructure failures (retry later) from failures of user code (the step failed). */
public final class Throwables {
    private Throwables() {
    }

    /**
     * True when {@code t} says the database or the connection failed rather than the step's logic: lost
     * connections (SQLSTATE class 08), serialization failures and deadlocks (40), resource exhaustion (53),
     * operator intervention such as a restart (57P), and on Citus a worker's connection that broke mid-transaction
     * (XX000 with one of Citus's texts for it, {@link #isCitusNodeFailure}). Decided by SQL state and connection state only: a unique
     * violation a step wrapped in its own exception, or an {@link OutOfMemoryError} in step code, fails the step.
     * The cause chain is walked at most {@code 100} deep and stops at a cycle.
     */
    public static boolean isInfrastructure(Throwable t) {
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable c = t; c != null && seen.size() < 100 && seen.add(c); c = c.getCause()) {
            if (c instanceof SQLRecoverableException || c instanceof SQLTransientException) {
                return true;
            }
            if (c instanceof SQLException sql
                    && (isInfrastructureState(sql.getSQLState()) || isCitusNodeFailure(sql))) {
                return true;
            }
        }
        return false;
    }

    /** SQLSTATE XX000 (internal_error): the state Citus gives its own errors and a worker's reply without a state. */
    static final String INTERNAL_ERROR = "XX000";

    /**
     * What Citus says, with {@link #INTERNAL_ERROR} and no state of its own, when its connection to a worker broke
     * mid-transaction (docs/guide/citus.md, "Faults"; Citus 13.2, captured on the test cluster): the health check
     * before a commit ({@code CheckRemoteTransactionsHealth}: a worker this transaction read from or wrote to is
     * gone), a one-phase commit that failed on the worker ({@code ErrorIfPostCommitFailedShardPlacements}), a
     * {@code PREPARE TRANSACTION} that failed, and a command ({@code SAVEPOINT}, {@code RELEASE}, a query) whose
     * reply libpq made up itself because the socket closed, which Citus passes on as XX000 with libpq's text.
     * Citus's own connection errors ("connection to the remote node ... failed") are 08006 and need no list.
     */
    private static final List<String> CITUS_NODE_FAILURES = List.of(
            "failure on connection marked as essential: ",
            "could not commit transaction for shard ",
            "failed to prepare transaction '",
            // libpq's own texts, as Citus relays them from a broken connection to a worker
            "SSL SYSCALL error: ", "SSL error: ", "server closed the connection unexpectedly",
            "could not receive data from server", "could not send data to server", "no connection to the server",
            "connection not open", "terminating connection due to");

    /**
     * True when {@code sql} is Citus reporting that a worker's connection broke ({@link #CITUS_NODE_FAILURES}), not
     * a statement's own error: SQLSTATE XX000 and one of those texts as the error's message (after the driver's
     * severity prefix). A user's XX000 with other words stays the user's.
     */
    static boolean isCitusNodeFailure(SQLException sql) {
        if (!INTERNAL_ERROR.equals(sql.getSQLState()) || sql.getMessage() == null) {
            return false;
        }
        String message = sql.getMessage();
        int colon = message.indexOf(": ");
        if (colon > 0 && colon < 10 && message.substring(0, colon).chars().allMatch(Character::isUpperCase)) {
            message = message.substring(colon + 2); // "ERROR: ", "FATAL: " (pgjdbc's severity prefix)
        }
        for (String failure : CITUS_NODE_FAILURES) {
            if (message.startsWith(failure)) {
                return true;
            }
        }
        return false;
    }

    /** The first SQL state in {@code t}'s cause chain, or null: for log lines. */
    public static String sqlState(Throwable t) {
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable c = t; c != null && seen.size() < 100 && seen.add(c); c = c.getCause()) {
            if (c instanceof SQLException sql && sql.getSQLState() != null) {
                return sql.getSQLState();
            }
        }
        return null;
    }

    /**
     * {@code t.toString()} for a log line, safe with hostile throwables: one whose message cannot be read, or is
     * megabytes long, or holds terminal control sequences.
     */
    public static String describe(Throwable t) {
        String text;
        try {
            text = String.valueOf(t);
        } catch (Throwable e) {
            text = t.getClass().getName() + " (its message cannot be read: " + e.getClass().getName() + ")";
        }
        if (text.length() > 1_000) {
            text = text.substring(0, 1_000) + "... (" + (text.length() - 1_000) + " more characters)";
        }
        return dev.coop.render.TerminalText.escape(text);
    }

    /** The failure of a run that gives up because of the cancellation {@code cancellationJson}. */
    public static CooperationException gaveUp(String cancellationJson, String source) {
        Failure cancellation = Failure.fromJson(cancellationJson);
        return CooperationException.of(new Failure("Gave up: " + cancellation.message(), GaveUpException.TYPE, source,
                List.of(), List.of(cancellation)));
    }

    /**
     * True when one of Coop's own statements (the emit, the advance, the join lookup, the commit: everything after the
     * user's code returned) failed for a reason that is not the step's: database trouble as above, or the server
     * cancelling the statement ({@code lock_timeout}: 55P03, {@code statement_timeout} or {@code pg_cancel_backend}:
     * 57014). The same SQL states raised by the user's own statements fail the step, as the user's own code decided
     * to run them under those settings.
     */
    public static boolean isBookkeepingTrouble(Throwable t) {
        if (isInfrastructure(t)) {
            return true;
        }
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable c = t; c != null && seen.size() < 100 && seen.add(c); c = c.getCause()) {
            if (c instanceof SQLException sql && ("55P03".equals(sql.getSQLState())
                    || "57014".equals(sql.getSQLState()))) {
                return true;
            }
        }
        return false;
    }

    /** True when the statement failed because the run's scope was cancelled (see assert_not_cancelled). */
    public static boolean isCancelled(Throwable t) {
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable c = t; c != null && seen.size() < 100 && seen.add(c); c = c.getCause()) {
            if (c instanceof SQLException sql && Store.CANCELLED.equals(sql.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    /**
     * True when user code ended the transaction that claimed its run by a route the step's connection could not refuse:
     * the advance found another transaction id ({@code claim_lost()}, SQLSTATE CP002), or the step's savepoint was
     * gone ({@link GuardedConnection#ended}).
     */
    static boolean endedTransaction(Throwable t) {
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable c = t; c != null && seen.size() < 100 && seen.add(c); c = c.getCause()) {
            if (c instanceof SQLException sql && GuardedConnection.ENDED_STATE.equals(sql.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    static boolean isInfrastructureState(String state) {
        return state != null && (state.startsWith("08") || state.startsWith("40") || state.startsWith("53")
                || state.startsWith("57P"));
    }
}
