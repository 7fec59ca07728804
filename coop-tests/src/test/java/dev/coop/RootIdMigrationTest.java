package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.failure.Failure;
import dev.coop.inspect.Outcome;
import dev.coop.internal.store.SchemaName;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The migration that adds {@code root_id} to {@code run}, {@code event}, {@code message} and {@code cancellation}
 * (issue 37, decision 5) moves a schema at version 26 with hierarchies in flight: a parent waiting on its child, a
 * parent mid-saga whose last step fails (its committed child is rolled back), a parent mid-rollback, and a cancelled
 * parent woken while its child had not started. Every row gets its hierarchy's root, the indexes on
 * {@code lineage[1]} become indexes on the column, and the engine then finishes every hierarchy from there.
 */
class RootIdMigrationTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String SCHEMA = "mig_v26";
    private static final String PARENT = "rid-parent";
    private static final String CHILD = "rid-child";
    private static final String[] V26 = {"V1__foundation.sql", "V2__joins.sql", "V3__schedules.sql", "V4__claims.sql",
            "V5__finally_launches.sql", "V6__retention.sql", "V7__step_instances.sql", "V8__operator_audit.sql",
            "V9__quiet_wakeups.sql", "V10__launch_options.sql", "V11__saga_limits.sql", "V12__saga_versions.sql",
            "V13__schema_diet.sql", "V14__rate_window.sql", "V15__continuation_reserve.sql", "V16__seen_once.sql",
            "V17__row_launch_notify.sql", "V18__light_trigger_checks.sql", "V19__join_check.sql",
            "V20__external_tasks.sql", "V21__attempt_history.sql", "V22__run_counts.sql", "V23__step_log.sql",
            "V24__cancellation_races.sql", "V25__compensating_steps.sql", "V26__task_compensation.sql"};

    private final List<String> ran = new CopyOnWriteArrayList<>();

    private List<Saga<?>> sagas() {
        Topic<String> parent = Topic.of("rid", String.class);
        Topic<String> child = Topic.of("rid-child", String.class);
        return List.of(Saga.on(parent, PARENT)
                .step("launch", step -> step.launch(child, step.payload()))
                .compensateWith((step, cause) -> ran.add("compensated " + step.payload()))
                .step("end", step -> {
                    if (step.payload().equals("fails")) {
                        throw new IllegalStateException("the end fails");
                    }
                    ran.add("ended " + step.payload());
                })
                .build(),
                Saga.on(child, CHILD)
                        .step("work", step -> ran.add("worked " + step.payload()))
                        .compensateWith((step, cause) -> ran.add("child compensated " + step.payload()))
                        .build());
    }

    @Test
    void hierarchies_in_flight_at_version_26_get_their_root_and_finish() throws Exception {
        DataSource dataSource = db.dataSource();
        String cause = new Failure("the end fails", IllegalStateException.class.getName(), "test", List.of(),
                List.of()).toJson();
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA " + SCHEMA);
            st.execute("CREATE TABLE " + SCHEMA + ".schema_version (version int PRIMARY KEY, name text NOT NULL, "
                    + "applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
            for (int i = 0; i < V26.length; i++) {
                st.execute(StepInstancesMigrationTest.version(V26[i], new SchemaName(SCHEMA)));
                st.execute("INSERT INTO " + SCHEMA + ".schema_version (version, name) VALUES (" + (i + 1) + ", '"
                        + V26[i] + "')");
            }
        }
        // as version 26's engine left them
        Hierarchy waits = hierarchy(dataSource, "waits", "WAITING", "HAPPY", null, "RUNNABLE", cause);
        Hierarchy fails = hierarchy(dataSource, "fails", "RUNNABLE", "HAPPY", null, "COMMITTED", cause);
        Hierarchy rolling = hierarchy(dataSource, "rolling", "RUNNABLE", "ROLLBACK", "START", "COMMITTED", cause);
        Hierarchy cancelled = hierarchy(dataSource, "cancelled", "RUNNABLE", "HAPPY", null, "RUNNABLE", cause);
        try (Connection c = dataSource.getConnection()) {
            exec(c, "INSERT INTO {s}.cancellation (scope_id, lineage, failure) VALUES (?, ARRAY[?::uuid], ?::jsonb)",
                    cancelled.root(), cancelled.root(),
                    new Failure("stop it", dev.coop.failure.CancellationRequestedException.TYPE,
                            "test", List.of(), List.of()).toJson());
            exec(c, "INSERT INTO {s}.event (message_id, type, lineage, exception)"
                    + " VALUES (?, 'CANCELLATION_REQUESTED', ARRAY[?::uuid], '{}'::jsonb)",
                    cancelled.root(), cancelled.root());
        }

        dev.coop.internal.store.Migrations.apply(dataSource, new SchemaName(SCHEMA));

        for (Hierarchy h : List.of(waits, fails, rolling, cancelled)) {
            assertThat(roots(dataSource, "run", "message_id IN (?, ?)", h.root(), h.childMessage()))
                    .as("runs of %s", h.root()).containsOnly(h.root()).hasSize(2);
            assertThat(roots(dataSource, "event", "message_id IN (?, ?)", h.root(), h.childMessage()))
                    .as("events of %s", h.root()).containsOnly(h.root());
            assertThat(roots(dataSource, "message", "id IN (?, ?)", h.root(), h.childMessage()))
                    .as("the root message and the one launched in its hierarchy").containsOnly(h.root()).hasSize(2);
        }
        assertThat(roots(dataSource, "cancellation", "scope_id IN (?, ?)", cancelled.root(), cancelled.root()))
                .containsExactly(cancelled.root());
        assertThat(indexDefinition(dataSource, "run_active_root")).contains("(root_id)").doesNotContain("lineage");
        assertThat(indexDefinition(dataSource, "event_root")).contains("(root_id)").doesNotContain("lineage");
        assertThat(nullable(dataSource)).as("root_id is NOT NULL on every hot table").isEmpty();

        try (CoopEngine engine = Coop.engine(dataSource).schema(SCHEMA).name("rid-mig").workers(2)
                .register(sagas().get(0)).register(sagas().get(1)).start()) {
            CoopClient client = engine.client();
            assertThat(client.awaitCompletion(new MessageId(waits.root()), WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(new MessageId(fails.root()), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.awaitCompletion(new MessageId(rolling.root()), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.awaitCompletion(new MessageId(cancelled.root()), WAIT))
                    .isEqualTo(Outcome.ROLLED_BACK);
            // and a hierarchy launched after the migration carries its root everywhere
            MessageId fresh = client.launch(Topic.of("rid", String.class), "fresh");
            assertThat(client.awaitCompletion(fresh, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(roots(dataSource, "event", "root_id = ? OR lineage[1] = ?", fresh.value(), fresh.value()))
                    .containsOnly(fresh.value()).hasSizeGreaterThan(4);
        }
        assertThat(ran).contains("worked waits", "ended waits", "ended fresh", "child compensated fails",
                "compensated fails", "child compensated rolling", "compensated rolling", "compensated cancelled");
        assertThat(ran).doesNotContain("worked cancelled", "ended fails", "ended cancelled", "ended rolling");
        assertThat(ran.indexOf("child compensated fails")).as("children first")
                .isLessThan(ran.indexOf("compensated fails"));
        assertThat(ran.indexOf("child compensated rolling")).isLessThan(ran.indexOf("compensated rolling"));
    }

    private record Hierarchy(UUID root, UUID parentRun, UUID childMessage, UUID childRun) {
    }

    /**
     * A parent of {@code rid-parent} past its step {@code launch} (instance 0), which launched one child in its
     * scope: the parent in {@code status} and {@code phase} ({@code stage}: its rollback stage), the child in
     * {@code childStatus} (committed after its step {@code work}, or not started).
     */
    private static Hierarchy hierarchy(DataSource ds, String payload, String status, String phase, String stage,
            String childStatus, String cause) throws Exception {
        UUID root = UUID.randomUUID();
        UUID parent = UUID.randomUUID();
        UUID childMessage = UUID.randomUUID();
        UUID child = UUID.randomUUID();
        boolean childDone = childStatus.equals("COMMITTED");
        boolean rollback = phase.equals("ROLLBACK");
        try (Connection c = ds.getConnection()) {
            exec(c, "INSERT INTO {s}.message (id, topic, payload) VALUES (?, 'rid', to_jsonb(?::text))", root,
                    payload);
            exec(c, "INSERT INTO {s}.message (id, topic, payload) VALUES (?, 'rid-child', to_jsonb(?::text))",
                    childMessage, payload);
            exec(c, """
                    INSERT INTO {s}.run (id, message_id, saga, lineage, status, phase, step_index, next_step,
                                         steps_done, iterations, pending_children, waiting_since, rollback_seq,
                                         rollback_stage, rollback_cause, started_at)
                    VALUES (?, ?, ?, ARRAY[?::uuid, ?::uuid], ?, ?, 1, 'end', 1, '{1}', ?, ?::timestamptz, ?, ?,
                            ?::jsonb, clock_timestamp())
                    """, parent, root, PARENT, root, parent, status, phase, childDone ? 0 : 1,
                    childDone ? null : java.time.OffsetDateTime.now(), rollback ? 0 : null, stage,
                    rollback ? cause : null);
            exec(c, """
                    INSERT INTO {s}.run (id, message_id, saga, lineage, parent_id, parent_seq, status, step_index,
                                         next_step, steps_done, iterations, started_at, finished_at)
                    VALUES (?, ?, ?, ARRAY[?::uuid, ?::uuid, ?::uuid], ?, 0, ?, ?, ?, ?, ?::int[],
                            CASE WHEN ? THEN clock_timestamp() END, CASE WHEN ? THEN clock_timestamp() END)
                    """, child, childMessage, CHILD, root, parent, child, parent, childStatus, childDone ? 1 : 0,
                    childDone ? null : "work", childDone ? 1 : 0, childDone ? "{1}" : "{}", childDone, childDone);
            log(c, root, null, new UUID[]{root}, "EMITTED", null, null, null);
            log(c, root, PARENT, new UUID[]{root, parent}, "SEEN", null, null, null);
            log(c, childMessage, PARENT, new UUID[]{root, parent}, "EMITTED", "launch", null, null);
            log(c, root, PARENT, new UUID[]{root, parent}, "SUSPENDED", "launch", 0, null);
            if (childDone) {
                UUID[] lineage = {root, parent, child};
                log(c, childMessage, CHILD, lineage, "SEEN", null, null, null);
                log(c, childMessage, CHILD, lineage, "SUSPENDED", "work", 0, null);
                log(c, childMessage, CHILD, lineage, "COMMITTED", "work", null, null);
            }
        }
        return new Hierarchy(root, parent, childMessage, child);
    }

    /** An event as version 26 wrote it; {@code seq}: the executed instance its SUSPENDED carries (step 0). */
    private static void log(Connection c, UUID message, String saga, UUID[] lineage, String type, String step,
            Integer seq, String exception) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("""
                INSERT INTO {s}.event (message_id, type, saga, engine, step, lineage, exception, started_at, step_seq,
                                       instance, iteration)
                VALUES (?, ?, ?, 'v26-engine', ?, ?, ?::jsonb, clock_timestamp(), ?, ?, ?)
                """.replace("{s}", SCHEMA))) {
            ps.setObject(1, message);
            ps.setString(2, type);
            ps.setString(3, saga);
            ps.setString(4, step);
            ps.setArray(5, c.createArrayOf("uuid", lineage));
            ps.setString(6, exception);
            ps.setObject(7, seq);
            ps.setObject(8, seq == null ? null : 0);
            ps.setObject(9, seq == null ? null : 1);
            ps.executeUpdate();
        }
    }

    private static void exec(Connection c, String sql, Object... values) throws Exception {
        try (PreparedStatement ps = c.prepareStatement(sql.replace("{s}", SCHEMA))) {
            for (int i = 0; i < values.length; i++) {
                ps.setObject(i + 1, values[i]);
            }
            ps.executeUpdate();
        }
    }

    /** The root_id of every row of {@code table} that {@code where} (two parameters) selects. */
    private static List<UUID> roots(DataSource ds, String table, String where, UUID a, UUID b) throws Exception {
        List<UUID> roots = new ArrayList<>();
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT root_id FROM " + SCHEMA + "." + table + " WHERE " + where)) {
            ps.setObject(1, a);
            ps.setObject(2, b);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    roots.add(rs.getObject(1, UUID.class));
                }
            }
        }
        return roots;
    }

    private static String indexDefinition(DataSource ds, String index) throws Exception {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT indexdef FROM pg_indexes WHERE schemaname = ? AND indexname = ?")) {
            ps.setString(1, SCHEMA);
            ps.setString(2, index);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("index %s exists", index).isTrue();
                return rs.getString(1);
            }
        }
    }

    /** The hot tables whose root_id may be null (none after the migration). */
    private static List<String> nullable(DataSource ds) throws Exception {
        List<String> tables = new ArrayList<>();
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT table_name FROM information_schema.columns
                 WHERE table_schema = ? AND column_name = 'root_id' AND is_nullable = 'YES'
                   AND table_name IN ('run', 'event', 'message', 'cancellation')
                """)) {
            ps.setString(1, SCHEMA);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    tables.add(rs.getString(1));
                }
            }
        }
        return tables;
    }
}
