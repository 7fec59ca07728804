package dev.coop;

import dev.coop.test.CitusDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * Counting the two-phase commits Citus coordinates (rows of the coordinator's {@code pg_dist_transaction}, one per
 * prepared connection) while their recovery is held back, and the diagnosis by the coordinator's log: with
 * {@code -Dcoop.citus.remoteCommands=true} the coordinator logs the commands it sends the workers
 * ({@code citus.log_remote_commands}), {@link #mark} writes a line into that log, and {@link #copyRemoteCommands}
 * copies it to {@code target/citus-1pc-remote.log}. Used by {@code CitusOnePhaseCommitTest}.
 */
final class TwoPhaseCommits {
    private TwoPhaseCommits() {
    }

    /** With {@code -Dcoop.citus.remoteCommands=true}: the coordinator logs the commands it sends the workers. */
    static void logRemoteCommands(CitusDatabase db) throws SQLException {
        if (Boolean.getBoolean("coop.citus.remoteCommands")) { // diagnosis: the coordinator's log names them
            try (Connection c = db.cluster().connect(db.cluster().ports().get(0), db.databaseName());
                    Statement st = c.createStatement()) {
                st.execute("ALTER DATABASE \"" + db.databaseName() + "\" SET citus.log_remote_commands = on");
                st.execute("ALTER DATABASE \"" + db.databaseName() + "\" SET log_min_messages = notice");
            }
        }
    }

    /** With {@code -Dcoop.citus.remoteCommands=true}: the coordinator's log to {@code target/citus-1pc-remote.log}. */
    static void copyRemoteCommands(CitusDatabase db) throws Exception {
        if (Boolean.getBoolean("coop.citus.remoteCommands")) {
            try (Connection c = db.dataSource().getConnection();
                    Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery("SHOW data_directory")) {
                rs.next();
                java.nio.file.Files.copy(java.nio.file.Path.of(rs.getString(1) + ".log"),
                        java.nio.file.Path.of("target", "citus-1pc-remote.log"),
                        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    /** With {@code -Dcoop.citus.remoteCommands=true}: a line {@code coop mark: what} in the coordinator's log. */
    static void mark(CitusDatabase db, String what) throws SQLException {
        if (Boolean.getBoolean("coop.citus.remoteCommands")) {
            try (Connection c = db.dataSource().getConnection();
                    PreparedStatement ps = c.prepareStatement("SELECT set_config('coop.mark', ?, false)")) {
                ps.setString(1, what);
                ps.execute();
                try (Statement st = c.createStatement()) {
                    st.execute("DO $$ BEGIN RAISE LOG 'coop mark: %', current_setting('coop.mark'); END $$");
                }
            }
        }
    }

    /** Holds back the recovery of two-phase commits until closed: {@link #count} counts every one of them. */
    static Held held(CitusDatabase db) throws SQLException {
        return new Held(db);
    }

    /** The lock that holds back the recovery of two-phase commits, while open. */
    static final class Held implements AutoCloseable {
        private final Connection recovery;

        private Held(CitusDatabase db) throws SQLException {
            recovery = db.cluster().connect(db.cluster().ports().get(0), db.databaseName());
            recovery.setAutoCommit(false);
            try (Statement st = recovery.createStatement()) {
                // the recovery takes this lock on the table, which the commits' inserts do not wait for: held, no row
                // is removed while a test counts (citus.recover_2pc_interval is SIGHUP only)
                st.execute("LOCK TABLE pg_dist_transaction IN SHARE UPDATE EXCLUSIVE MODE");
            }
        }

        @Override
        public void close() throws SQLException {
            recovery.rollback();
            recovery.close();
        }
    }

    /** The hierarchy's event ids, in the order of writing. */
    static List<Long> idsOf(CitusDatabase db, MessageId id) throws SQLException {
        List<Long> ids = new ArrayList<>();
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT id FROM coop.event WHERE root_id = ? ORDER BY created_at, id")) {
            ps.setObject(1, id.value());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                }
            }
        }
        return ids;
    }

    /** The two-phase commits Citus coordinated that the recovery has not removed (it is held back). */
    static long count(CitusDatabase db) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_dist_transaction")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
