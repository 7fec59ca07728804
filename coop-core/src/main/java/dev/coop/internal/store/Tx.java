package dev.coop.internal.store;

import dev.coop.failure.CoopStoreException;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/** Runs short bookkeeping work in a transaction of its own, turning database failures into CoopStoreException. */
public final class Tx {
    private Tx() {
    }

    /** Work done on a connection inside the transaction. */
    @FunctionalInterface
    public interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    /**
     * Runs {@code work} in a new transaction and commits it; rolls back on any failure.
     *
     * @param what what is being done, for the error message ("launch a message on topic 'x'")
     */
    public static <T> T run(DataSource dataSource, String what, Work<T> work) {
        try (Connection c = dataSource.getConnection()) {
            return inTransaction(c, work);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not " + what + ": " + why(e), e);
        }
    }

    /**
     * Runs {@code work}, which sends exactly one statement, in auto-commit mode: the statement is its own transaction
     * (atomic, committed when it returns), so there is no separate COMMIT round trip. Nothing thrown after the
     * statement can undo it: use {@link #run} when a check that follows it may refuse the work.
     */
    public static <T> T oneStatement(DataSource dataSource, String what, Work<T> work) {
        try (Connection c = dataSource.getConnection()) {
            if (c.getAutoCommit()) {
                return work.run(c);
            }
            c.setAutoCommit(true); // a pool that hands out connections without auto-commit: nothing is open yet
            try {
                return work.run(c);
            } finally {
                c.setAutoCommit(false);
            }
        } catch (SQLException e) {
            throw new CoopStoreException("Could not " + what + ": " + why(e), e);
        }
    }

    /**
     * Runs {@code work} on the caller's connection: inside the caller's transaction when one is open (the caller
     * commits), else in a transaction of its own, committed here.
     */
    public static <T> T onCallersConnection(Connection c, String what, Work<T> work) {
        try {
            return c.getAutoCommit() ? inTransaction(c, work) : work.run(c);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not " + what + ": " + why(e), e);
        }
    }

    /** The error's message, and whether it means that the database did not answer in time (a network timeout). */
    static String why(SQLException e) {
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable t = e; t != null && seen.size() < 100 && seen.add(t); t = t.getCause()) {
            if (t instanceof java.net.SocketTimeoutException) {
                return e.getMessage() + " (no answer from the database within the databaseTimeout, so whether it"
                        + " was done is unknown; is the network or the server down?)";
            }
        }
        return e.getMessage();
    }

    static <T> T inTransaction(Connection c, Work<T> work) throws SQLException {
        boolean autoCommit = c.getAutoCommit();
        c.setAutoCommit(false);
        Throwable failure = null;
        try {
            T result = work.run(c);
            c.commit();
            return result;
        } catch (Throwable e) {
            failure = e;
            rollbackQuietly(c);
            throw e;
        } finally {
            rollbackQuietly(c); // never let restoring auto-commit commit what is left open
            restoreAutoCommit(c, autoCommit, failure);
        }
    }

    /** Sets auto-commit back after {@link #inTransaction}'s work, as {@link #autoCommitBack} does. */
    private static void restoreAutoCommit(Connection c, boolean autoCommit, Throwable failure) throws SQLException {
        SQLException e = autoCommitBack(c, autoCommit, failure);
        if (e != null) {
            throw e;
        }
    }

    /**
     * Turns auto-commit on again after work that ran with it off; returns what that threw, or adds it to
     * {@code failed} (and returns null) when the work failed: a pool that retired the connection because of that
     * failure refuses it (HikariCP, on SQLSTATE class 08, which Citus gives the connection error of a stopped
     * worker), and the failure, not the pool's "Connection is closed", is what says why.
     */
    public static SQLException autoCommitBack(Connection c, Throwable failed) {
        return autoCommitBack(c, true, failed);
    }

    private static SQLException autoCommitBack(Connection c, boolean autoCommit, Throwable failed) {
        try {
            c.setAutoCommit(autoCommit);
            return null;
        } catch (SQLException e) {
            if (failed == null) {
                return e;
            }
            failed.addSuppressed(e);
            return null;
        }
    }

    /**
     * Rolls back what {@code c} has open, if anything, and swallows what that throws: the connection is then likely
     * gone, and its transaction dies with it. Called before giving a connection back or restoring auto-commit, so
     * that nothing left open is ever committed.
     */
    public static void rollbackQuietly(Connection c) {
        try {
            if (!c.getAutoCommit()) {
                c.rollback();
            }
        } catch (SQLException | RuntimeException ignored) {
            // the connection is likely gone; the transaction dies with it
        }
    }
}
