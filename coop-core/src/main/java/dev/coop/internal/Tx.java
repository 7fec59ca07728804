package dev.coop.internal;

import dev.coop.CoopStoreException;
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
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                T result = work.run(c);
                c.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            throw new CoopStoreException("Could not " + what + ": " + e.getMessage(), e);
        }
    }
}
