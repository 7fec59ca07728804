package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.internal.store.Migrations;
import dev.coop.internal.store.SchemaName;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A run's SEEN is written once (schema version 16). A step that runs COMMIT on its own connection makes its claim's
 * SEEN durable and lets go of the run; another engine's claim may then lock the run with a statement whose snapshot
 * was taken before that COMMIT. The claim's test for an earlier SEEN must see it all the same: it reads the log with
 * a snapshot of its own. Shown here with the statement held between its start and that test by an advisory lock,
 * while another transaction commits a SEEN.
 */
class SeenOnceTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    private static final long HOLD = 7_716_001L;

    @Test
    void the_test_for_an_earlier_seen_sees_one_committed_after_the_claim_statement_began() throws Exception {
        SchemaName schema = new SchemaName("seen_once");
        DataSource ds = db.dataSource();
        Migrations.apply(ds, schema);
        UUID message = UUID.randomUUID();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO seen_once.message (id, topic, payload, root_id) VALUES ('" + message
                    + "', 't', '{}', '"
                    + message + "')");
        }
        try (Connection holder = ds.getConnection();
                Connection claimer = ds.getConnection();
                Connection committer = ds.getConnection()) {
            try (Statement st = holder.createStatement()) {
                st.execute("SELECT pg_advisory_lock(" + HOLD + ")");
            }
            int claimerPid = pid(claimer);
            // the claim's two tests in one statement: its snapshot is taken now, both run after the lock is granted
            CompletableFuture<boolean[]> missing = CompletableFuture.supplyAsync(() -> {
                try (PreparedStatement ps = claimer.prepareStatement("""
                        WITH held AS MATERIALIZED (SELECT pg_advisory_lock(?) AS locked)
                        SELECT NOT EXISTS (SELECT 1 FROM seen_once.event e
                                            WHERE e.message_id = ? AND e.saga = 's' AND e.type = 'SEEN'),
                               seen_once.seen_missing(?, 's')
                          FROM held
                        """)) {
                    ps.setLong(1, HOLD);
                    ps.setObject(2, message);
                    ps.setObject(3, message);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return new boolean[]{rs.getBoolean(1), rs.getBoolean(2)};
                    }
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            Await.until("the claim statement waits for the advisory lock", Duration.ofSeconds(20),
                    () -> waitingForLock(committer, claimerPid));
            try (Statement st = committer.createStatement()) { // auto-commit: committed at once
                st.execute("INSERT INTO seen_once.event (message_id, type, saga, lineage, root_id) VALUES ('"
                        + message + "', 'SEEN', 's', ARRAY['" + message + "']::uuid[], '" + message + "')");
            }
            try (Statement st = holder.createStatement()) {
                st.execute("SELECT pg_advisory_unlock(" + HOLD + ")");
            }
            boolean[] result = missing.get(20, TimeUnit.SECONDS);
            assertThat(result[0]).as("the statement's snapshot predates the SEEN (the test the claim used to make)")
                    .isTrue();
            assertThat(result[1]).as("seen_missing reads with a snapshot of its own").isFalse();
            try (Statement st = claimer.createStatement()) {
                st.execute("SELECT pg_advisory_unlock_all()");
            }
        }
    }

    private static int pid(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** Whether the session {@code pid} waits for an advisory lock. */
    private static boolean waitingForLock(Connection c, int pid) {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM pg_locks WHERE pid = ? AND locktype = 'advisory' AND NOT granted")) {
            ps.setInt(1, pid);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) > 0;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
