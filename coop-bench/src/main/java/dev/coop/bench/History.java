package dev.coop.bench;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.Topic;
import dev.coop.bench.Payloads.Job;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * W1 throughput and claim latency on a database holding {@code --history-events} events of finished history, versus
 * an empty one. The history is written with SQL (generate_series) in the shapes the engine writes: alternately a
 * 3-step saga (EMITTED, SEEN, 3 SUSPENDED, COMMITTED) and a 2-step parent whose first step emitted one message
 * handled by a 1-step child (9 events, 2 messages, 2 runs); every run COMMITTED, time-ordered UUIDv7 ids spread over
 * the last 30 days. Runs on the two databases alternate, so drift on a shared machine hits both alike.
 */
final class History {
    private static final String TAG = "h";
    static final String SAGA = "w1-saga-" + TAG;
    static final String TOPIC = "w1-" + TAG;

    private History() {
    }

    static void run(Options o, Report report) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        try (BenchDb empty = BenchDb.create("history_empty", o.keep);
                BenchDb loaded = BenchDb.create("history_loaded", o.keep)) {
            RunEnv.migrate(empty);
            RunEnv.migrate(loaded);
            // the W1 runs use one saga and topic throughout, as production does, and the history's 3-step sagas are
            // runs of that same saga: dead entries of finished runs stay in the claim index of the saga until vacuum
            Map<String, Object> load = load(loaded, o.historyEvents, SAGA, TOPIC);
            long historyRuns = ((Number) load.get("sagaRuns")).longValue();
            out.put("load", load);
            Bench.progress("history: loaded " + load.get("events") + " events in " + load.get("totalSeconds") + " s");
            Runs emptyRuns = new Runs("history/empty");
            Runs loadedRuns = new Runs("history/loaded");
            SqlStats[] last = new SqlStats[2];
            for (int i = 0; i < o.warmups + o.runs; i++) {
                boolean warm = i < o.warmups;
                String label = warm ? "warm-up" : "run " + (i - o.warmups + 1) + "/" + o.runs;
                for (int v = 0; v < 2; v++) {
                    BenchDb db = v == 0 ? empty : loaded;
                    SqlStats stats = new SqlStats();
                    last[v] = stats;
                    Map<String, Object> m;
                    try (RunEnv env = RunEnv.on(o, db, "h" + v + "_" + i, true, false)) {
                        m = env.bracket(Throughput.w1(o, db, stats.wrap(env.pool), env.physTxPerSec,
                                o.historySagas, o.historyThreads, TAG,
                                (v == 0 ? 0 : historyRuns) + (long) i * o.historySagas));
                    }
                    for (String kind : List.of("claim", "reclaim", "advance", "emit", "runStatuses")) {
                        String role = kind.equals("emit") || kind.equals("runStatuses") ? "client" : "engine";
                        long[] s = Stats.sorted(stats.samples(role, kind));
                        m.put(kind + "P50Ms", Stats.ms(Stats.percentile(s, 50)));
                        m.put(kind + "P99Ms", Stats.ms(Stats.percentile(s, 99)));
                    }
                    m.put("jdbc", stats.table(3.0 * o.historySagas));
                    (v == 0 ? emptyRuns : loadedRuns).add(m, warm, label);
                }
            }
            out.put("empty", emptyRuns.toMap());
            out.put("loaded", loadedRuns.toMap());
            List<Double> ratios = new ArrayList<>();
            List<Double> normalized = new ArrayList<>();
            for (int i = 0; i < emptyRuns.measured.size(); i++) {
                double e = ((Number) emptyRuns.measured.get(i).get("stepsPerSec")).doubleValue();
                double l = ((Number) loadedRuns.measured.get(i).get("stepsPerSec")).doubleValue();
                double er = ((Number) emptyRuns.measured.get(i).get("ratioToPhys")).doubleValue();
                double lr = ((Number) loadedRuns.measured.get(i).get("ratioToPhys")).doubleValue();
                ratios.add(l / e);
                normalized.add(lr / er);
            }
            double ratio = Stats.median(ratios);
            double normRatio = Stats.median(normalized);
            out.put("loadedOverEmpty", Stats.round(ratio, 3));
            out.put("loadedOverEmptyPhysNormalized", Stats.round(normRatio, 3));
            out.put("explainClaimEmpty", explainClaim(empty, last[0], o));
            out.put("explainClaimLoaded", explainClaim(loaded, last[1], o));
            out.put("sizes", sizes(loaded));
            String vacuum = "SELECT n_live_tup, n_dead_tup, autovacuum_count, vacuum_count, last_autovacuum::text"
                    + " FROM pg_stat_user_tables WHERE schemaname = 'coop' AND relname = 'run'";
            out.put("runTableVacuumEmpty", empty.rows(vacuum));
            out.put("runTableVacuumLoaded", loaded.rows(vacuum));
            report.workloads.put("history", out);
            String w = "history ("
                    + String.format(java.util.Locale.ROOT, "%,d", ((Number) load.get("events")).longValue())
                    + " events)";
            report.row(w, "load time s", ((Number) load.get("totalSeconds")).doubleValue(), null, null);
            report.row(w, "W1 steps/s, empty DB", emptyRuns, "stepsPerSec", "ratioToPhys", null, null);
            report.row(w, "W1 steps/s, with history", loadedRuns, "stepsPerSec", "ratioToPhys", null, null);
            report.row(w, "with history / empty (raw)", ratio, ">= 0.9", ratio >= 0.9);
            report.row(w, "with history / empty (each vs its phys)", normRatio, ">= 0.9", normRatio >= 0.9);
            report.row(w, "claim p50 ms, empty", emptyRuns, "claimP50Ms", null, null, null);
            report.row(w, "claim p50 ms, with history", loadedRuns, "claimP50Ms", null, null, null);
            report.row(w, "claim p99 ms, empty", emptyRuns, "claimP99Ms", null, null, null);
            report.row(w, "claim p99 ms, with history", loadedRuns, "claimP99Ms", null, null, null);
            report.row(w, "reclaim p50 ms, empty / history", emptyRuns, "reclaimP50Ms", null, null, null);
            report.row(w, "reclaim p50 ms, with history", loadedRuns, "reclaimP50Ms", null, null, null);
        }
    }

    /** Writes the history; returns timings and counts. */
    static Map<String, Object> load(BenchDb db, long events, String saga, String topic) throws SQLException {
        long pairs = Math.max(1, events / 15);
        long hierarchies = 2 * pairs;
        Map<String, Object> m = new LinkedHashMap<>();
        long t0 = System.nanoTime();
        Connection c = db.admin();
        List<String> indexes = new ArrayList<>();
        try (Statement st = c.createStatement()) {
            st.execute("SET session_replication_role = replica"); // no FK checks, no notify triggers while loading
            st.execute("SET maintenance_work_mem = '512MB'");
            try (ResultSet rs = st.executeQuery(
                    """
                            SELECT i.indexname, i.indexdef FROM pg_indexes i
                              JOIN pg_index x ON x.indexrelid = format('%I.%I', i.schemaname, i.indexname)::regclass
                             WHERE i.schemaname = 'coop' AND i.tablename IN ('event', 'message', 'run') AND NOT x.indisprimary""")) {
                while (rs.next()) {
                    indexes.add(rs.getString(2));
                }
            }
            for (String def : indexes) {
                String name = def.replaceFirst("^CREATE (UNIQUE )?INDEX (\\S+) ON .*$", "$2");
                st.execute("DROP INDEX coop." + name);
            }
            st.execute("""
                    CREATE OR REPLACE FUNCTION public.bench_hid(ms bigint, slot int, g bigint) RETURNS uuid
                    LANGUAGE sql IMMUTABLE AS $$
                      SELECT (lpad(to_hex(ms), 12, '0') || '7' || lpad(to_hex(slot), 3, '0') || '8'
                              || lpad(to_hex(g), 15, '0'))::uuid
                    $$""");
            st.execute("DROP TABLE IF EXISTS public.bench_hist_template");
            st.execute("""
                    CREATE TABLE public.bench_hist_template (kind int, k int, m int, type text, saga text, engine text,
                                                             step text, l int)""");
            st.execute("""
                    INSERT INTO public.bench_hist_template VALUES
                      (1, 0, 1, 'EMITTED',   NULL,          NULL,          NULL, 1),
                      (1, 1, 1, 'SEEN',      'hist-a',      'hist-engine', NULL, 2),
                      (1, 2, 1, 'SUSPENDED', 'hist-a',      'hist-engine', 'a',  2),
                      (1, 3, 1, 'SUSPENDED', 'hist-a',      'hist-engine', 'b',  2),
                      (1, 4, 1, 'SUSPENDED', 'hist-a',      'hist-engine', 'c',  2),
                      (1, 5, 1, 'COMMITTED', 'hist-a',      'hist-engine', 'c',  2),
                      (0, 0, 1, 'EMITTED',   NULL,          NULL,          NULL, 1),
                      (0, 1, 1, 'SEEN',      'hist-parent', 'hist-engine', NULL, 2),
                      (0, 2, 3, 'EMITTED',   'hist-parent', 'hist-engine', 'p0', 2),
                      (0, 3, 1, 'SUSPENDED', 'hist-parent', 'hist-engine', 'p0', 2),
                      (0, 4, 3, 'SEEN',      'hist-child',  'hist-engine', NULL, 3),
                      (0, 5, 3, 'SUSPENDED', 'hist-child',  'hist-engine', 'c0', 3),
                      (0, 6, 3, 'COMMITTED', 'hist-child',  'hist-engine', 'c0', 3),
                      (0, 7, 1, 'SUSPENDED', 'hist-parent', 'hist-engine', 'p1', 2),
                      (0, 8, 1, 'COMMITTED', 'hist-parent', 'hist-engine', 'p1', 2)""".replace("'hist-a'",
                    quote(saga)));
        }
        // newer engine versions keep per-run step history and a version counter: fill them like the engine would
        List<String> runColumns = db.rows("SELECT column_name::text AS c FROM information_schema.columns"
                + " WHERE table_schema = 'coop' AND table_name = 'run'").stream().map(r -> (String) r.get("c"))
                .toList();
        boolean versioned = runColumns.contains("history") && runColumns.contains("version");
        String extraColumns = versioned ? ", history, version" : "";
        m.put("runColumns", runColumns);
        long now = System.currentTimeMillis();
        long span = 30L * 24 * 3600 * 1000;
        long start = now - span - 3_600_000;
        double step = (double) span / hierarchies;
        long chunk = 200_000;
        long tInsert = System.nanoTime();
        for (long from = 1; from <= hierarchies; from += chunk) {
            long to = Math.min(hierarchies, from + chunk - 1);
            String series = "(SELECT g, (" + start + " + floor(g * " + step + "))::bigint AS ms FROM generate_series("
                    + from + "::bigint, " + to + "::bigint) g) x";
            exec(c, "INSERT INTO coop.message (id, topic, payload, created_at, root_id)"
                    + " SELECT public.bench_hid(ms, s.slot, g),"
                    + " CASE WHEN s.slot = 3 THEN 'hist-child' WHEN g % 2 = 1 THEN " + quote(topic)
                    + " ELSE 'hist-parent' END,"
                    + " jsonb_build_object('n', g), to_timestamp(ms / 1000.0), public.bench_hid(ms, 1, g)"
                    + " FROM " + series
                    + " CROSS JOIN LATERAL (SELECT 1 AS slot UNION ALL SELECT 3 WHERE g % 2 = 0) s");
            exec(c, "INSERT INTO coop.run (id, message_id, saga, lineage, parent_id, parent_seq, status, step_index,"
                    + " steps_done, runnable_at, created_at, started_at, finished_at, root_id" + extraColumns + ")"
                    + " SELECT public.bench_hid(ms, 2, g), public.bench_hid(ms, 1, g),"
                    + " CASE WHEN g % 2 = 1 THEN " + quote(saga) + " ELSE 'hist-parent' END,"
                    + " ARRAY[public.bench_hid(ms, 1, g), public.bench_hid(ms, 2, g)], NULL, NULL, 'COMMITTED',"
                    + " CASE WHEN g % 2 = 1 THEN 3 ELSE 2 END, CASE WHEN g % 2 = 1 THEN 3 ELSE 2 END,"
                    + " to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0),"
                    + " to_timestamp(ms / 1000.0) + interval '20 milliseconds', public.bench_hid(ms, 1, g)"
                    + (versioned
                            ? ", CASE WHEN g % 2 = 1 THEN '{0,1,2}'::int[] ELSE '{0,1}'::int[] END,"
                                    + " CASE WHEN g % 2 = 1 THEN 3 ELSE 2 END"
                            : "")
                    + " FROM " + series
                    + " UNION ALL"
                    + " SELECT public.bench_hid(ms, 4, g), public.bench_hid(ms, 3, g), 'hist-child',"
                    + " ARRAY[public.bench_hid(ms, 1, g), public.bench_hid(ms, 2, g), public.bench_hid(ms, 4, g)],"
                    + " public.bench_hid(ms, 2, g), 0, 'COMMITTED', 1, 1,"
                    + " to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0),"
                    + " to_timestamp(ms / 1000.0) + interval '10 milliseconds', public.bench_hid(ms, 1, g)"
                    + (versioned ? ", '{0}'::int[], 1" : "")
                    + " FROM " + series + " WHERE g % 2 = 0");
            exec(c, "INSERT INTO coop.event (message_id, type, saga, engine, step, lineage, created_at, root_id)"
                    + " SELECT public.bench_hid(ms, e.m, g), e.type, e.saga, e.engine, e.step,"
                    + " CASE e.l WHEN 1 THEN ARRAY[public.bench_hid(ms, 1, g)]"
                    + " WHEN 2 THEN ARRAY[public.bench_hid(ms, 1, g), public.bench_hid(ms, 2, g)]"
                    + " ELSE ARRAY[public.bench_hid(ms, 1, g), public.bench_hid(ms, 2, g), public.bench_hid(ms, 4, g)] END,"
                    + " to_timestamp(ms / 1000.0) + e.k * interval '1 millisecond', public.bench_hid(ms, 1, g)"
                    + " FROM " + series + " JOIN public.bench_hist_template e ON e.kind = (g % 2)::int"
                    + " ORDER BY g, e.k");
            Bench.progress("history: inserted hierarchies " + to + "/" + hierarchies);
        }
        m.put("insertSeconds", Stats.round((System.nanoTime() - tInsert) / 1e9, 1));
        long tIndex = System.nanoTime();
        try (Statement st = c.createStatement()) {
            for (String def : indexes) {
                st.execute(def);
            }
            st.execute("RESET session_replication_role");
        }
        m.put("indexSeconds", Stats.round((System.nanoTime() - tIndex) / 1e9, 1));
        long tVacuum = System.nanoTime();
        exec(c, "VACUUM (ANALYZE) coop.message");
        exec(c, "VACUUM (ANALYZE) coop.run");
        exec(c, "VACUUM (ANALYZE) coop.event");
        m.put("vacuumAnalyzeSeconds", Stats.round((System.nanoTime() - tVacuum) / 1e9, 1));
        m.put("totalSeconds", Stats.round((System.nanoTime() - t0) / 1e9, 1));
        m.put("events", db.longValue("SELECT count(*) FROM coop.event"));
        m.put("messages", db.longValue("SELECT count(*) FROM coop.message"));
        m.put("runs", db.longValue("SELECT count(*) FROM coop.run"));
        m.put("recreatedIndexes", indexes);
        m.put("sagaRuns", pairs); // the 3-step hierarchies are runs of the benchmark's own W1 saga
        long notCommitted = db.longValue("SELECT count(*) FROM coop.run WHERE status <> 'COMMITTED'");
        if (notCommitted != 0 || ((Number) m.get("runs")).longValue() != 3 * pairs) {
            throw new IllegalStateException("history load wrote unexpected runs: " + m);
        }
        return m;
    }

    private static String quote(String literal) {
        return "'" + literal.replace("'", "''") + "'";
    }

    private static void exec(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    static Map<String, Object> sizes(BenchDb db) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("databaseBytes", db.longValue("SELECT pg_database_size(current_database())"));
        for (String t : List.of("event", "message", "run")) {
            m.put(t + "TotalBytes", db.longValue("SELECT pg_total_relation_size(?::regclass)", "coop." + t));
            m.put(t + "IndexBytes", db.longValue("SELECT pg_indexes_size(?::regclass)", "coop." + t));
        }
        return m;
    }

    /**
     * EXPLAIN (ANALYZE, BUFFERS) of the engine's claim statement (as captured from the engine's own JDBC calls) with
     * 100 runnable runs waiting, inside a transaction that is rolled back.
     */
    static Object explainClaim(BenchDb db, SqlStats stats, Options o) {
        String sql = stats == null ? null : stats.sqlOf("claim");
        if (sql == null) {
            return "claim statement not captured";
        }
        try (var pool = db.server.dataSource(db.name, 2, "explain")) {
            CoopClient client = Coop.client(pool);
            Topic<Job> topic = Topic.of(TOPIC, Job.class);
            for (int i = 0; i < 100; i++) {
                client.launch(topic, new Job(i));
            }
            return explain(pool, sql, SAGA, "explain");
        } catch (RuntimeException | SQLException e) {
            return "EXPLAIN failed: " + e;
        }
    }

    static List<String> explain(DataSource ds, String sql, Object... params) throws SQLException {
        List<String> plan = new ArrayList<>();
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("EXPLAIN (ANALYZE, BUFFERS) " + sql)) {
                for (int i = 0; i < params.length; i++) {
                    ps.setObject(i + 1, params[i]);
                }
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        plan.add(rs.getString(1));
                    }
                }
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
        return plan;
    }
}
