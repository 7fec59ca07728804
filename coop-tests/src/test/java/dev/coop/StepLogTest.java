package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A step's transaction writes one log row: the SUSPENDED event of an executed instance carries it ({@code step_seq},
 * {@code instance}, {@code iteration}), and a claim reads the newest instances and the one being rolled back from
 * those events through the index {@code event_message (message_id, saga, step_seq)}.
 */
class StepLogTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    private static final Duration WAIT = Duration.ofSeconds(60);

    @Test
    void each_executed_instance_is_carried_by_its_suspended_event(DataSource dataSource) throws Exception {
        Topic<Empty> topic = Topic.of("step-log", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "step-log-saga")
                .flowStep("loop", step -> step.iteration() < 3 ? Flow.repeat() : Flow.next())
                .step("end", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<String> log = new ArrayList<>();
            try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                    SELECT type, step, step_seq, instance, iteration FROM coop.event
                     WHERE message_id = ? ORDER BY id
                    """)) {
                ps.setObject(1, id.value());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        log.add(rs.getString(1) + " " + rs.getString(2) + " " + rs.getObject(3) + " "
                                + rs.getObject(4) + " " + rs.getObject(5));
                    }
                }
            }
            assertThat(log).containsExactly("EMITTED null null null null", "SEEN null null null null",
                    "SUSPENDED loop 0 0 1", "SUSPENDED loop 1 0 2", "SUSPENDED loop 2 0 3", "SUSPENDED end 3 1 1",
                    "COMMITTED end null null null");
        }
    }

    /**
     * However long a run looped, its claim reads its newest instances by a backward walk of the index that stops after
     * eight entries, and the instance being rolled back by one index probe: never a scan of the run's log.
     */
    @Test
    void a_long_loops_claim_reads_eight_index_entries_of_its_log(DataSource dataSource) throws Exception {
        int n = 600;
        Topic<Empty> topic = Topic.of("step-log-long", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "step-log-long-saga")
                .flowStep("loop", step -> step.iteration() < n ? Flow.repeat() : Flow.next())
                .flowStep("wait", step -> Flow.repeatAfter(Duration.ofHours(1)))
                .build();
        MessageId id;
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            id = engine.client().launch(topic, new Empty());
            dev.coop.test.Await.until("the loop ran " + n + " times", WAIT, () -> stepsDone(dataSource, id) > n);
        }
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("ANALYZE coop.event");
            st.execute("UPDATE coop.run SET runnable_at = clock_timestamp() - interval '1 second'");
        }
        String happy = explainClaim(dataSource, saga, null);
        assertThat(happy).contains("Index Scan Backward using event_message on event e")
                .doesNotContain("Seq Scan on event");
        assertThat(happy.lines().filter(l -> l.contains("Index Scan Backward using event_message")))
                .singleElement().asString().contains("rows=8 loops=1");
        assertThat(happy.lines().filter(l -> l.contains("Index Scan using event_message on event")))
                .as("no probe for a rolled back instance on the happy path").singleElement().asString()
                .contains("never executed");
        String rollback = explainClaim(dataSource, saga, n / 2);
        assertThat(rollback).contains("Index Scan using event_message on event e")
                .doesNotContain("Seq Scan on event");
        assertThat(rollback.lines().filter(l -> l.contains("Index Scan using event_message on event e")))
                .singleElement().asString().contains("rows=1 loops=1");
        assertThat(rollback.lines().filter(l -> l.contains("Index Scan Backward using event_message")))
                .as("the newest instances are not read on the rollback path").singleElement().asString()
                .contains("never executed");
    }

    private static int stepsDone(DataSource ds, MessageId id) {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT steps_done FROM coop.run WHERE message_id = ?")) {
            ps.setObject(1, id.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The claim's plan, executed in a transaction rolled back after; on the rollback path at {@code seq} if given. */
    private static String explainClaim(DataSource ds, Saga<Empty> saga, Integer seq) throws Exception {
        dev.coop.internal.store.Store store = new dev.coop.internal.store.Store(
                new dev.coop.internal.store.SchemaName("coop"), dev.coop.internal.store.Time.DATABASE);
        List<String> plan = new ArrayList<>();
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try {
                if (seq != null) {
                    try (PreparedStatement ps = c.prepareStatement("UPDATE coop.run SET phase = 'ROLLBACK', "
                            + "rollback_stage = 'CHILDREN', rollback_seq = ?")) {
                        ps.setInt(1, seq);
                        ps.executeUpdate();
                    }
                }
                try (PreparedStatement ps = c.prepareStatement(
                        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + store.claimSql(saga.name()))) {
                    store.bindClaim(ps, saga.name(), saga.version(), "explain");
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            plan.add(rs.getString(1));
                        }
                    }
                }
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
        String text = String.join("\n", plan);
        assertThat(text).as("the run was claimed").contains("LockRows (actual rows=1 loops=1)");
        return text;
    }

    /**
     * What a continuing step writes: the difference between sagas of six and of three no-op steps is three continuing
     * steps per saga. Each adds one row, its SUSPENDED event, and nothing else (no second record of the same
     * transition), counted in the tables. What the write-ahead log shows per continuing step (pg_walinspect: heap
     * records and index entries per relation, bytes) is printed.
     */
    @Test
    void a_continuing_step_adds_one_row_its_suspended_event(DataSource dataSource) throws Exception {
        int sagas = 200;
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
        } catch (java.sql.SQLException e) { // a server without contrib: the rows are counted all the same
            System.out.println("pg_walinspect is not available, WAL not read: " + e.getMessage());
        }
        Map<String, Long> rows3 = new java.util.TreeMap<>();
        Map<String, Long> rows6 = new java.util.TreeMap<>();
        Map<String, Long> three = writes(dataSource, "w3", 3, sagas, rows3);
        Map<String, Long> six = writes(dataSource, "w6", 6, sagas, rows6);
        System.out.println(perContinuingStep("WAL block references", three, six, 3 * sagas));
        System.out.println(perContinuingStep("rows added", rows3, rows6, 3 * sagas));
        Map<String, Long> added = new java.util.TreeMap<>();
        rows6.forEach((table, n) -> added.put(table, n - rows3.getOrDefault(table, 0L)));
        assertThat(added.remove("event")).isEqualTo(3L * sagas);
        added.remove("run_count"); // the outcome counts' rows: one per saga, minute and counting connection
        assertThat(added).as("rows added outside the log by continuing steps")
                .allSatisfy((table, n) -> assertThat(n).as(table).isZero());
    }

    private static String perContinuingStep(String what, Map<String, Long> three, Map<String, Long> six, int steps) {
        StringBuilder report = new StringBuilder(what + " per continuing step (6-step minus 3-step sagas, /"
                + steps + "):\n");
        java.util.Set<String> keys = new java.util.TreeSet<>(six.keySet());
        keys.addAll(three.keySet());
        for (String key : keys) {
            long d = six.getOrDefault(key, 0L) - three.getOrDefault(key, 0L);
            report.append(String.format("  %-55s %8.2f%n", key, d / (double) steps));
        }
        return report.toString();
    }

    /**
     * Runs {@code sagas} sagas of {@code steps} no-op steps; returns the WAL block references by relation and kind, and
     * puts the rows each table of the schema gained into {@code rows}.
     */
    private static Map<String, Long> writes(DataSource ds, String name, int steps, int sagas, Map<String, Long> rows)
            throws Exception {
        Topic<Empty> topic = Topic.of("writes-" + name, Empty.class);
        Saga.Builder<Empty> builder = Saga.on(topic, "writes-" + name + "-saga");
        for (int i = 0; i < steps; i++) {
            builder.step("s" + i, step -> {
            });
        }
        Saga<Empty> saga = builder.build();
        Coop.engine(ds).name("writes-" + name).register(saga).start().close(); // registers the topic
        CoopClient client = Coop.client(ds);
        List<MessageId> ids = new ArrayList<>();
        for (int i = 0; i < sagas; i++) {
            ids.add(client.launch(topic, new Empty()));
        }
        Map<String, Long> before = rows(ds);
        String start = lsn(ds);
        try (CoopEngine engine = Coop.engine(ds).name("writes-" + name).workers(4).register(saga).start()) {
            for (MessageId id : ids) {
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
        }
        String end = lsn(ds);
        rows(ds).forEach((table, n) -> rows.put(table, n - before.getOrDefault(table, 0L)));
        Map<String, Long> counts = new LinkedHashMap<>();
        try (Connection c = ds.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_extension WHERE extname = 'pg_walinspect'")) {
            rs.next();
            if (rs.getInt(1) == 0) {
                return counts;
            }
        }
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT coalesce(cl.relname, b.relfilenode::text) || ' ' || lower(b.resource_manager) || ' '
                       || split_part(b.record_type, '+', 1), count(*), sum(b.record_length)
                  FROM pg_get_wal_block_info(?::pg_lsn, ?::pg_lsn) b
                  LEFT JOIN pg_class cl ON cl.oid = pg_filenode_relation(0, b.relfilenode)
                 WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND b.relforknumber = 0
                 GROUP BY 1
                """)) {
            ps.setString(1, start);
            ps.setString(2, end);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.put(rs.getString(1), rs.getLong(2));
                    counts.put(rs.getString(1) + " bytes", rs.getLong(3));
                }
            }
        }
        return counts;
    }

    /** Rows per table of the schema (table names from the catalog). */
    private static Map<String, Long> rows(DataSource ds) throws Exception {
        Map<String, Long> rows = new java.util.TreeMap<>();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            List<String> tables = new ArrayList<>();
            try (ResultSet rs = st.executeQuery("SELECT relname FROM pg_class WHERE relkind = 'r' "
                    + "AND relnamespace = 'coop'::regnamespace")) {
                while (rs.next()) {
                    tables.add(rs.getString(1));
                }
            }
            for (String table : tables) {
                try (ResultSet rs = st.executeQuery("SELECT count(*) FROM coop.\"" + table + "\"")) {
                    rs.next();
                    rows.put(table, rs.getLong(1));
                }
            }
        }
        return rows;
    }

    private static String lsn(DataSource ds) throws Exception {
        try (Connection c = ds.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT pg_current_wal_insert_lsn()::text")) {
            rs.next();
            return rs.getString(1);
        }
    }
}
