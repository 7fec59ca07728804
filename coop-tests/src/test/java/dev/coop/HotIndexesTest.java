package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The readers of the indexes that schema versions 27 and 28 changed ({@code run_finished}, {@code run_key}) stay index lookups
 * on a populated {@code run}: 50,000 finished hierarchies (a root and a child each), a few parked runs, keyed runs
 * active and held. The client's statements are recorded as sent and explained as their generic plan (what a
 * prepared statement settles on); the ordering-key reads inside the schema's functions are explained as written there.
 */
class HotIndexesTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final int HIERARCHIES = 50_000;

    @BeforeAll
    static void populated(DataSource dataSource) throws SQLException {
        Coop.engine(dataSource).register(Saga.on(Topic.of("pop", Payloads.Empty.class), "pop-saga").step("s", step -> {
        }).build()).start().close();
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("SET session_replication_role = replica"); // rows written as they are, no trigger
            st.execute("""
                    INSERT INTO coop.message (id, topic, payload, created_at, root_id)
                    SELECT md5(i::text)::uuid, 'pop', '{}', now() - i * interval '1 second', md5(i::text)::uuid
                      FROM generate_series(1, %d) i""".formatted(HIERARCHIES));
            st.execute("""
                    INSERT INTO coop.run (id, message_id, saga, lineage, status, created_at, finished_at, root_id)
                    SELECT md5('r' || i)::uuid, md5(i::text)::uuid, 'pop-saga',
                           ARRAY[md5(i::text)::uuid, md5('r' || i)::uuid], 'COMMITTED',
                           now() - i * interval '1 second', now() - i * interval '1 second' + interval '1 second',
                           md5(i::text)::uuid
                      FROM generate_series(1, %d) i""".formatted(HIERARCHIES));
            st.execute(
                    """
                            INSERT INTO coop.run (id, message_id, saga, lineage, parent_id, status, created_at, finished_at, root_id)
                            SELECT md5('c' || i)::uuid, md5(i::text)::uuid, 'pop-child',
                                   ARRAY[md5(i::text)::uuid, md5('r' || i)::uuid, md5('c' || i)::uuid], md5('r' || i)::uuid,
                                   'COMMITTED', now() - i * interval '1 second', now() - i * interval '1 second', md5(i::text)::uuid
                              FROM generate_series(1, %d) i"""
                            .formatted(HIERARCHIES));
            st.execute("""
                    UPDATE coop.run SET status = 'PARKED', finished_at = NULL
                     WHERE saga = 'pop-saga' AND id IN (SELECT md5('r' || i)::uuid FROM generate_series(1, 50) i)""");
            st.execute("""
                    UPDATE coop.run SET ordering_key = 'k' || (i % 20),
                           status = CASE WHEN i <= 20 THEN 'RUNNABLE' ELSE 'HELD' END, finished_at = NULL, key_seq = i
                      FROM generate_series(51, 450) i WHERE id = md5('r' || i)::uuid""");
            st.execute("RESET session_replication_role");
            st.execute("ANALYZE coop.run");
        }
    }

    @Test
    void parked_runs_are_read_from_run_parked(DataSource dataSource) throws SQLException {
        List<String> sent = new CopyOnWriteArrayList<>();
        CoopClient client = Coop.client(RecordingDataSource.of(dataSource, sent));
        assertThat(client.parkedRuns(10)).hasSize(10);
        assertThat(client.countParked("pop-saga")).isEqualTo(50);
        List<String> parked = sent.stream().filter(s -> s.contains("'PARKED'")).toList();
        assertThat(parked).hasSize(2);
        for (String sql : parked) {
            assertThat(plan(dataSource, sql)).contains("run_parked").doesNotContain("Seq Scan on run");
        }
    }

    @Test
    void retention_finds_its_candidates_in_run_finished_in_order(DataSource dataSource) throws SQLException {
        List<String> sent = new CopyOnWriteArrayList<>();
        Coop.client(RecordingDataSource.of(dataSource, sent)).prune(Duration.ofDays(3_650)); // nothing that old
        String candidates = sent.stream().filter(s -> s.contains("FOR UPDATE OF r SKIP LOCKED")).findFirst()
                .orElseThrow();
        String plan = plan(dataSource, candidates);
        assertThat(plan).contains("Index Scan using run_finished on run r").doesNotContain("Seq Scan on run");
        assertThat(plan.substring(plan.indexOf("LockRows"))).doesNotContain("Sort"); // ordered by the index
    }

    @Test
    void an_ordering_keys_active_and_held_runs_are_read_from_run_key(DataSource dataSource) throws SQLException {
        // as release_ordering_key and hold_keyed_run read them (schema version 10), and inspection's held_behind
        assertThat(plan(dataSource, """
                SELECT 1 FROM coop.run r WHERE r.saga = ? AND r.ordering_key = ?
                   AND r.status IN ('RUNNABLE', 'WAITING', 'PARKED')"""))
                .contains("run_key").doesNotContain("Seq Scan");
        assertThat(plan(dataSource, """
                SELECT 1 FROM coop.run r WHERE r.saga = ? AND r.ordering_key = ?
                   AND r.status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD')"""))
                .contains("run_key").doesNotContain("Seq Scan");
        assertThat(plan(dataSource, """
                SELECT h.id FROM coop.run h WHERE h.saga = ? AND h.ordering_key = ? AND h.status = 'HELD'
                 ORDER BY h.key_seq LIMIT 1"""))
                .contains("run_key").doesNotContain("Seq Scan").doesNotContain("Sort");
    }

    /** The generic plan of {@code sql} (its {@code ?} parameters numbered), as EXPLAIN prints it. */
    static String plan(DataSource dataSource, String sql) throws SQLException {
        Matcher m = Pattern.compile("\\?").matcher(sql);
        StringBuilder numbered = new StringBuilder();
        int n = 0;
        while (m.find()) {
            m.appendReplacement(numbered, "\\$" + ++n);
        }
        m.appendTail(numbered);
        List<String> lines = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            c.setAutoCommit(false);
            st.execute("SET LOCAL plan_cache_mode = force_generic_plan");
            st.execute("PREPARE explained AS " + numbered.toString().replace("{schema}", "coop"));
            String nulls = String.join(", ", java.util.Collections.nCopies(n, "NULL"));
            try (ResultSet rs = st.executeQuery("EXPLAIN EXECUTE explained" + (n == 0 ? "" : "(" + nulls + ")"))) {
                while (rs.next()) {
                    lines.add(rs.getString(1));
                }
            }
            st.execute("DEALLOCATE explained");
            c.rollback();
        }
        String plan = String.join("\n", lines);
        System.out.println(sql + "\n" + plan + "\n");
        return plan;
    }
}
