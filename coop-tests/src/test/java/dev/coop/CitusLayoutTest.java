package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.test.CitusDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Citus layout of Coop's schema ({@code CitusLayout}): which table is distributed how, which triggers remain and
 * where, and that a statement by a hierarchy's root is routed to one shard on one worker.
 */
class CitusLayoutTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase(4);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations, then the layout (the database has the citus extension)
    }

    @Test
    void hot_tables_are_distributed_by_root_co_located_and_the_registry_is_replicated() throws SQLException {
        assertThat(strings(db.dataSource(), """
                SELECT logicalrelid::text || ' ' || CASE partmethod WHEN 'h' THEN 'hash('
                         || column_to_column_name(logicalrelid, partkey) || ') group ' || (colocationid = (
                         SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'coop.run'::regclass))
                       WHEN 'n' THEN CASE repmodel WHEN 's' THEN 'citus local' ELSE 'reference' END END
                  FROM pg_dist_partition WHERE logicalrelid::text LIKE 'coop.%' ORDER BY 1"""))
                .containsExactly(
                        "coop.audit hash(message_id) group true",
                        "coop.cancellation hash(root_id) group true",
                        "coop.engine reference",
                        "coop.event hash(root_id) group true",
                        "coop.external_task citus local",
                        "coop.join_group citus local",
                        "coop.join_member citus local",
                        "coop.key_turn citus local",
                        "coop.launch_key citus local",
                        "coop.message hash(root_id) group true",
                        "coop.run hash(root_id) group true",
                        "coop.saga_registration reference",
                        "coop.saga_version reference",
                        "coop.schedule citus local",
                        "coop.signal citus local");
        assertThat(strings(db.dataSource(), """
                SELECT conrelid::regclass::text || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
                 WHERE contype = 'p' AND conrelid IN ('coop.run'::regclass, 'coop.event'::regclass,
                       'coop.message'::regclass, 'coop.cancellation'::regclass, 'coop.audit'::regclass)
                 ORDER BY 1""")).containsExactly(
                "coop.audit PRIMARY KEY (message_id, id)",
                "coop.cancellation PRIMARY KEY (root_id, scope_id)",
                "coop.event PRIMARY KEY (root_id, id)",
                "coop.message PRIMARY KEY (root_id, id)",
                "coop.run PRIMARY KEY (root_id, id)");
        assertThat(strings(db.dataSource(), """
                SELECT DISTINCT nodeport::text FROM citus_shards WHERE table_name = 'coop.run'::regclass"""))
                .as("run's shards on both workers").hasSize(2);
        assertThat(strings(db.dataSource(), "SELECT indexdef FROM pg_indexes WHERE schemaname = 'coop'"
                + " AND indexname IN ('cancellation_scope', 'message_idempotency') ORDER BY 1"))
                .as("unique per shard, with citus.allow_unsafe_constraints").containsExactly(
                        "CREATE UNIQUE INDEX cancellation_scope ON coop.cancellation USING btree (scope_id)",
                        "CREATE UNIQUE INDEX message_idempotency ON coop.message USING btree (topic, idempotency_key)"
                                + " WHERE (idempotency_key IS NOT NULL)");
    }

    @Test
    void the_triggers_left_are_on_tables_local_to_the_coordinator() throws SQLException {
        assertThat(strings(db.dataSource(), """
                SELECT t.tgrelid::regclass::text || '.' || t.tgname || CASE WHEN p.logicalrelid IS NULL
                       THEN ' (local)' WHEN p.partmethod = 'n' AND p.repmodel = 's' THEN ' (citus local)'
                       ELSE ' (distributed)' END
                  FROM pg_trigger t LEFT JOIN pg_dist_partition p ON p.logicalrelid = t.tgrelid
                 WHERE NOT t.tgisinternal AND t.tgrelid::regclass::text LIKE 'coop.%'
                   AND t.tgrelid::regclass::text !~ '_[0-9]+$' -- a Citus local table's shard has them too
                 ORDER BY 1"""))
                .containsExactly(
                        "coop.join_group.join_group_timeout_notify (citus local)",
                        "coop.schedule.schedule_created_notify (citus local)",
                        "coop.schedule.schedule_moved_notify (citus local)");
    }

    @Test
    void statements_by_root_are_one_task_on_one_worker() throws SQLException {
        UUID root = UUID.randomUUID();
        assertThat(plan("SELECT type, created_at FROM coop.event WHERE root_id = ? ORDER BY id", root))
                .contains("Task Count: 1");
        assertThat(plan("UPDATE coop.run SET attempt = attempt + 1 WHERE root_id = ? AND id = ?", root, root))
                .contains("Task Count: 1");
        assertThat(plan("SELECT r.status FROM coop.run r JOIN coop.message m ON m.root_id = r.root_id"
                + " AND m.id = r.message_id WHERE r.root_id = ?", root)).contains("Task Count: 1");
        assertThat(plan("SELECT count(*) FROM coop.run WHERE status = 'RUNNABLE'"))
                .as("a cross-hierarchy read runs on every shard").contains("Task Count: 8");
    }

    @Test
    void launch_keys_are_held_on_the_coordinator_where_a_key_is_unique_across_shards() throws SQLException {
        Topic<Payloads.Empty> topic = Topic.of("citus-keyed", Payloads.Empty.class);
        CoopClient client = Coop.client(db.dataSource());
        MessageId first = client.launch(topic, new Payloads.Empty(), LaunchOptions.none().idempotencyKey("order-1"));
        assertThat(client.launch(topic, new Payloads.Empty(), LaunchOptions.none().idempotencyKey("order-1")))
                .isEqualTo(first);
        try (Connection c = db.dataSource().getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_dist_partition"
                        + " WHERE logicalrelid IN ('coop.launch_key'::regclass, 'coop.key_turn'::regclass)"
                        + " AND partmethod = 'n' AND repmodel = 's'")) {
            rs.next();
            assertThat(rs.getInt(1)).as("launch_key and key_turn: Citus local tables, on the coordinator").isEqualTo(2);
        }
        try (Connection c = db.dataSource().getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT message_id FROM coop.launch_key WHERE topic = 'citus-keyed'")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getObject(1, UUID.class)).isEqualTo(first.value());
        }
    }

    /**
     * The layout's functions are created when missing or different only ({@code CitusFunctions}): a second start
     * (an engine, then a client) leaves their catalog rows as they were, on the coordinator and on a worker, so that
     * starting takes no DDL lock on a running cluster. A function replaced by another text since is created again.
     */
    @Test
    void starting_again_does_not_replace_the_layouts_functions() throws SQLException {
        String functions = """
                SELECT p.oid::regprocedure::text || ' ' || p.xmin::text || ' '
                       || coalesce(obj_description(p.oid, 'pg_proc') LIKE 'coop:%', false)
                  FROM pg_proc p WHERE p.pronamespace = 'coop'::regnamespace
                   AND p.proname IN ('now_or', 'now_plus', 'notify_off', 'xact_running', 'release_ordering_key_after',
                                     'take_key_turns')
                 ORDER BY 1""";
        List<String> before = strings(db.dataSource(), functions);
        List<String> onWorker = onWorker(functions);
        assertThat(before).hasSize(6).allMatch(f -> f.endsWith(" true"), "marked coop:");
        Saga<Payloads.Empty> saga = Saga.on(Topic.of("citus-layout-again", Payloads.Empty.class), "citus-layout-again")
                .step("s", step -> {
                }).build();
        Coop.engine(db.dataSource()).notifications(false).workers(1).register(saga).start().close(); // layout again
        Coop.client(db.dataSource());
        assertThat(strings(db.dataSource(), functions)).as("after two more starts").isEqualTo(before);
        assertThat(onWorker(functions)).as("on a worker").isEqualTo(onWorker);
        try (Connection c = db.dataSource().getConnection();
                Statement st = c.createStatement()) { // another text, the comment kept (CREATE OR REPLACE keeps it)
            st.execute("CREATE OR REPLACE FUNCTION coop.notify_off(channel text, payload text) RETURNS void"
                    + " LANGUAGE plpgsql IMMUTABLE AS 'BEGIN PERFORM 1; END'");
        }
        Coop.client(db.dataSource());
        assertThat(strings(db.dataSource(), "SELECT prosrc FROM pg_proc WHERE oid = 'coop.notify_off(text, text)'"
                + "::regprocedure")).as("created again").containsExactly("BEGIN END");
        List<String> after = strings(db.dataSource(), functions);
        Coop.client(db.dataSource());
        assertThat(strings(db.dataSource(), functions)).isEqualTo(after);
    }

    private static List<String> onWorker(String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Connection c = db.cluster().connect(db.cluster().ports().get(1), db.databaseName());
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1).replaceFirst(" (true|false)$", "")); // comments stay on the coordinator
            }
        }
        return out;
    }

    /** Citus's EXPLAIN of a statement with bind values; tasks and nodes are in its text. */
    static String plan(String sql, Object... values) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("EXPLAIN " + sql)) {
            for (int i = 0; i < values.length; i++) {
                ps.setObject(i + 1, values[i]);
            }
            StringBuilder out = new StringBuilder();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.append(rs.getString(1)).append('\n');
                }
            }
            return out.toString();
        }
    }

    static List<String> strings(DataSource dataSource, String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Connection c = dataSource.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }
}
