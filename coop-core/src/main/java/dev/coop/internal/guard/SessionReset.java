package dev.coop.internal.guard;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Gives a step's connection back as Coop had it, once user code that used it is done: in the step's transaction,
 * before Coop's own statements that follow (its log rows, its advance, the rest of a round), and so before the
 * connection serves another step or goes back to the pool. One round trip, only after a step that used its connection.
 *
 * <p>What it undoes, and why each: the step's settings, transaction-local ({@code SET LOCAL}, {@code set_config(...,
 * true)}) or not ({@code RESET ALL} at session level overrides both, so its effect outlives the commit): a search path
 * that would shadow Coop's functions and operators, a {@code statement_timeout} or {@code lock_timeout} that would
 * cancel Coop's statements, a custom setting (a tenant) that would reach the next step, session defaults such as
 * {@code default_transaction_read_only} that would break Coop's next transactions; the role and the session
 * authorization (not covered by {@code RESET ALL}); cursors ({@code CLOSE ALL}, holdable ones too); channels listened
 * to ({@code UNLISTEN *}); temporary tables, {@code ON COMMIT DROP} ones too ({@code DISCARD TEMP}); sequence state
 * ({@code DISCARD SEQUENCES}); session advisory locks; statements prepared with SQL {@code PREPARE} (not the driver's
 * own, which it keeps and would miss). Not {@code DISCARD ALL}: it cannot run in a transaction, and it would drop the
 * driver's prepared statements. Coop's own transaction-local settings (the {@code application_name} that names the
 * engine, the transaction's {@code idle_in_transaction_session_timeout}) are set again.
 *
 * <p>Settings come back to the connection's reset values: those it was opened with (startup options, the role's and
 * the database's settings), not what a pool's initialization SQL set with {@code SET}.
 *
 * <p>What only the transaction's end undoes is reported, not undone: a transaction made read-only, which fails the
 * step (its rollback to its savepoint undoes that too). The guard reports transaction-level advisory locks
 * ({@link GuardedConnection.Guard#tookTransactionLocks()}): a round then commits before another run's step starts.
 */
public final class SessionReset {
    /** The reset, and the read of what only the transaction's end undoes. */
    private final String sql;

    /** The deallocation of what SQL {@code PREPARE} left, run only when there is some. */
    static final String DEALLOCATE = """
            DO $coop$
            DECLARE
              n text;
            BEGIN
              FOR n IN SELECT p.name FROM pg_catalog.pg_prepared_statements p WHERE p.from_sql LOOP
                EXECUTE pg_catalog.format('DEALLOCATE %I', n);
              END LOOP;
            END
            $coop$""";

    /**
     * @param idleInTransactionMillis the {@code idle_in_transaction_session_timeout} Coop's transactions set (0: the
     *        server's)
     */
    public SessionReset(long idleInTransactionMillis) {
        String idle = idleInTransactionMillis <= 0
                ? "NULL::text"
                : "pg_catalog.set_config('idle_in_transaction_session_timeout', '" + idleInTransactionMillis
                        + "', true)";
        // statement_timeout first: the step may have set one that would cancel the rest
        this.sql = """
                SET statement_timeout TO DEFAULT;
                SET SESSION AUTHORIZATION DEFAULT;
                RESET ROLE;
                RESET ALL;
                CLOSE ALL;
                UNLISTEN *;
                DISCARD TEMP;
                DISCARD SEQUENCES;
                SELECT pg_catalog.pg_advisory_unlock_all();
                SELECT pg_catalog.set_config('application_name', ?, true), {idle},
                       pg_catalog.current_setting('transaction_read_only') = 'on' AS read_only,
                       EXISTS (SELECT 1 FROM pg_catalog.pg_prepared_statements p WHERE p.from_sql) AS prepared
                """.replace("{idle}", idle);
    }

    /**
     * Resets {@code c} (the step's connection under its guard) after a step used it.
     *
     * @param applicationName what the transaction's {@code application_name} is set to again (the engine's)
     * @return whether the transaction is read-only now (the step made it so): nothing can be written in it
     * @throws SQLException when the reset failed: the transaction is unusable (the step left it aborted, say), and the
     *         connection should not serve another step before the reset succeeded
     */
    public boolean reset(Connection c, String applicationName) throws SQLException {
        boolean readOnly;
        boolean prepared;
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, applicationName);
            ResultSet rs = lastResult(ps);
            rs.next();
            readOnly = rs.getBoolean("read_only");
            prepared = rs.getBoolean("prepared");
        }
        if (prepared) {
            try (Statement st = c.createStatement()) {
                st.execute(DEALLOCATE);
            }
        }
        return readOnly;
    }

    /** Whether a reset on this thread's step connection failed since the last one that succeeded. */
    private static final ThreadLocal<Boolean> FAILED = new ThreadLocal<>();

    /** A reset of this thread's step connection failed: it must not serve another step before one succeeds. */
    public static void failed() {
        FAILED.set(Boolean.TRUE);
    }

    /** A reset of this thread's step connection succeeded. */
    public static void succeeded() {
        FAILED.remove();
    }

    /**
     * Whether the step connection of this thread was left in a state no reset undid since (the worker then evicts
     * it from its pool); forgets it.
     */
    public static boolean takeFailed() {
        boolean failed = FAILED.get() != null;
        FAILED.remove();
        return failed;
    }

    /** Executes {@code ps} and moves to its last result, the final SELECT's. */
    private static ResultSet lastResult(PreparedStatement ps) throws SQLException {
        ps.execute();
        ResultSet last = null;
        do {
            ResultSet rs = ps.getResultSet();
            if (rs != null) {
                last = rs;
            }
        } while (ps.getMoreResults(Statement.KEEP_CURRENT_RESULT) || ps.getUpdateCount() != -1);
        if (last == null) {
            throw new SQLException("the reset of a step's connection returned no result");
        }
        return last;
    }
}
