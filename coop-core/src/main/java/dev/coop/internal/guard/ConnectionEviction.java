package dev.coop.internal.guard;

import java.sql.Connection;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes a connection out of its pool: one whose session makes Coop's own statements fail (a read-only or otherwise
 * changed session default, a role without Coop's privileges, a search path that hides what Coop calls), or whose reset
 * after a step failed, so that its state is unknown. Handing it back would fail every later claim on it; aborted, it
 * is closed, and the pool opens a fresh one in its place.
 */
public final class ConnectionEviction {
    private static final Logger log = LoggerFactory.getLogger(ConnectionEviction.class);

    private ConnectionEviction() {
    }

    /**
     * Whether {@code failure} of Coop's own statements says the session is to blame, not the database: an invalid
     * transaction state (SQLSTATE class 25: a read-only transaction, say) or an access rule (class 42: privileges, and
     * names that resolve by the session's search path).
     */
    public static boolean sessionTrouble(Throwable failure) {
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable t = failure; t != null && seen.size() < 100 && seen.add(t); t = t.getCause()) {
            if (t instanceof SQLException sql && sql.getSQLState() != null
                    && (sql.getSQLState().startsWith("25") || sql.getSQLState().startsWith("42"))) {
                return true;
            }
        }
        return false;
    }

    /**
     * Evicts {@code c} when Coop's work on it failed by {@link #sessionTrouble} ({@code failed}, null: it did not),
     * or when a reset of it after a step failed and none succeeded since ({@link SessionReset#takeFailed()}).
     */
    public static void ifNeeded(Connection c, String engineId, Throwable failed) {
        if (SessionReset.takeFailed()) {
            evict(c, engineId, "a step left it in a state its reset could not undo");
        } else if (failed != null && sessionTrouble(failed)) {
            evict(c, engineId, "its session made Coop's own statement fail (" + failed + ")");
        }
    }

    /**
     * Aborts {@code c}: its pool drops it instead of handing it out again. When the driver cannot abort (pgjdbc's
     * {@code abort} checks a permission that Java 24 and later refuse to check), the driver's own connection under the
     * pool's is closed instead: a pool then finds it closed when it is given back, and drops it. Never throws.
     */
    static void evict(Connection c, String engineId, String why) {
        log.warn("Engine {} closes a database connection instead of giving it back to its pool: {}", engineId, why);
        try {
            c.abort(Runnable::run);
            return;
        } catch (SQLException | RuntimeException | AbstractMethodError e) {
            log.debug("Engine {} could not abort the connection ({}); closing the driver's", engineId, e.toString());
        }
        try {
            ((Connection) c.unwrap(org.postgresql.PGConnection.class)).close();
        } catch (SQLException | RuntimeException e) {
            log.warn("Engine {} could not close the connection ({}); it goes back to its pool", engineId,
                    e.toString());
        }
    }
}
