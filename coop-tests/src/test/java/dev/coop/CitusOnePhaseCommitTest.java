package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.CitusDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A step's transaction on Citus commits in one phase on the hierarchy's worker: a W1-like saga (three steps that do
 * nothing) and its client's launch leave no row in the coordinator's {@code pg_dist_transaction}, where Citus records
 * each two-phase commit it coordinates. The recovery of those rows is held back by a lock while the test counts.
 * {@code -Dcoop.citus.remoteCommands=true} copies the coordinator's log, with the commands Citus sent the workers
 * ({@code citus.log_remote_commands}), to {@code target/citus-1pc-remote.log}.
 */
class CitusOnePhaseCommitTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void a_three_step_saga_commits_its_steps_without_two_phase_commit() throws Exception {
        if (Boolean.getBoolean("coop.citus.remoteCommands")) { // diagnosis: the coordinator's log names them
            try (Connection c = db.cluster().connect(db.cluster().ports().get(0), db.databaseName());
                    Statement st = c.createStatement()) {
                st.execute("ALTER DATABASE \"" + db.databaseName() + "\" SET citus.log_remote_commands = on");
                st.execute("ALTER DATABASE \"" + db.databaseName() + "\" SET log_min_messages = notice");
            }
        }
        Coop.client(db.dataSource()); // migrations and the Citus layout
        try (Connection recovery = db.cluster().connect(db.cluster().ports().get(0), db.databaseName());
                Statement st = recovery.createStatement()) {
            recovery.setAutoCommit(false);
            // the recovery of two-phase commits takes this lock on the table, which the commits' inserts do not
            // wait for: held, no row is removed while the test counts (citus.recover_2pc_interval is SIGHUP only)
            st.execute("LOCK TABLE pg_dist_transaction IN SHARE UPDATE EXCLUSIVE MODE");
            runsThreeSteps();
            recovery.rollback();
        } finally {
            copyRemoteCommands();
        }
    }

    private static void copyRemoteCommands() throws Exception {
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

    private static void runsThreeSteps() throws Exception {
        Topic<Empty> topic = Topic.of("citus-1pc", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-1pc")
                .step("s1", step -> {
                })
                .step("s2", step -> {
                })
                .step("s3", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).notifications(false)
                .pollInterval(Duration.ofMillis(50)).register(saga).start()) {
            engine.client().awaitCompletion(engine.client().launch(topic, new Empty()), WAIT); // warm-up
            long beforeLaunch = prepared();
            MessageId id = engine.client().launch(topic, new Empty());
            long afterLaunch = prepared();
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            long afterSteps = prepared();
            System.out.println("2PC of the client's launch: " + (afterLaunch - beforeLaunch)
                    + ", of three steps: " + (afterSteps - afterLaunch));
            assertThat(afterSteps - afterLaunch).as("two-phase commits of the steps").isZero();
            assertThat(afterLaunch - beforeLaunch).as("two-phase commits of the launch").isZero();
            java.util.List<dev.coop.inspect.Event> events = engine.client().events(id);
            dev.coop.test.Invariants.assertAll(events);
            // every id from the coordinator's event_id_seq: a worker's range starts at its group id << 48
            assertThat(idsOf(id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
        }
    }

    /**
     * A step that launches one child (a scoped {@code EMIT_ONE}), and the child's count-off, which commits the parent
     * (its COMMITTED written after the child's events, {@code AdvanceSql.countOffOnCitus}): all in one phase.
     */
    @Test
    void a_step_launching_a_child_and_the_child_counting_off_at_it() throws Exception {
        Coop.client(db.dataSource());
        Topic<Empty> parentTopic = Topic.of("citus-1pc-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-1pc-child", Empty.class);
        Saga<Empty> parent = Saga.on(parentTopic, "citus-1pc-parent")
                .step("first", step -> {
                })
                .step("launch", step -> step.launch(childTopic, new Empty())) // committed by its child's count-off
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-1pc-child")
                .step("work", step -> {
                })
                .build();
        try (Connection recovery = db.cluster().connect(db.cluster().ports().get(0), db.databaseName());
                Statement st = recovery.createStatement();
                CoopEngine engine = Coop.engine(db.dataSource()).notifications(false)
                        .pollInterval(Duration.ofMillis(50)).register(parent, child).start()) {
            recovery.setAutoCommit(false);
            st.execute("LOCK TABLE pg_dist_transaction IN SHARE UPDATE EXCLUSIVE MODE");
            long before = prepared();
            MessageId id = engine.client().launch(parentTopic, new Empty());
            long afterLaunch = prepared();
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            long after = prepared();
            System.out.println("2PC rows (one per worker prepared) of the client's launch: " + (afterLaunch - before)
                    + ", of the parent's two steps and the child's step with its count-off: " + (after - afterLaunch));
            java.util.List<dev.coop.inspect.Event> events = engine.client().events(id);
            dev.coop.test.Invariants.assertAll(events);
            assertThat(events.get(events.size() - 1).type()).as(dev.coop.test.EventLog.table(events))
                    .isEqualTo(dev.coop.inspect.EventType.COMMITTED);
            assertThat(idsOf(id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
            assertThat(after - before).as("two-phase commits").isZero();
            recovery.rollback();
        }
    }

    static java.util.List<Long> idsOf(MessageId id) throws SQLException {
        java.util.List<Long> ids = new java.util.ArrayList<>();
        try (Connection c = db.dataSource().getConnection();
                java.sql.PreparedStatement ps = c.prepareStatement(
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

    /** The two-phase commits Citus coordinated that the recovery has not removed (it is off for this database). */
    static long prepared() throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_dist_transaction")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
