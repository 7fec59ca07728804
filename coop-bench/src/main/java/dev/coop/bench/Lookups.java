package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.inspect.RunQuery;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Lookups on a large finished history: {@code --lookup-runs} runs written with SQL (generate_series), nine in ten of
 * them a saga's run whose launch carries a business key ({@code order/<n>}) and two tags (a selective
 * {@code customer/<n mod 1,000,000>} and a common {@code region/<n mod 8>}), one in ten an external task's run (key
 * {@code payment/<n>}, the newest 1,000 open, the rest completed). Then ANALYZE, and EXPLAIN (ANALYZE, BUFFERS) of the
 * statements that {@code client.runs(RunQuery...businessKey/tag)}, {@code client.externalTask(key)} and
 * {@code client.complete(key, ...)} send, captured from those calls with their bound values; the selective lookups
 * must not scan a table.
 */
final class Lookups {
    private static final int OPEN_TASKS = 1_000;

    private Lookups() {
    }

    static void run(Options o, Report report) throws Exception {
        try (BenchDb db = BenchDb.create("lookups", o.keep)) {
            RunEnv.migrate(db);
            long n = Math.max(1_000, o.lookupRuns / 10 * 10);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("load", load(db, n));
            Bench.progress("lookups: loaded " + n + " runs in " + ((Map<?, ?>) out.get("load")).get("totalSeconds")
                    + " s");
            long order = n / 2 + 1; // g % 10 == 1: a saga's run
            long openTask = n; // the newest task, open
            Map<String, Object> plans = new LinkedHashMap<>();
            HikariDataSource pool = db.pool(2, "lookups");
            try {
                CapturedStatements captured = new CapturedStatements();
                CoopClient client = Coop.client(captured.wrap(pool));
                explain(plans, "runs by business key", pool, captured, "message_business_key",
                        () -> client.runs(RunQuery.newest().businessKey("order/" + order)));
                explain(plans, "runs by tag, ~" + Math.max(1, n * 9 / 10 / 1_000_000) + " runs carry it", pool,
                        captured, "message_tags",
                        () -> client.runs(RunQuery.newest().tag("customer/" + (order % 1_000_000))));
                explain(plans, "runs by tag, ~" + n * 9 / 10 / 8 + " runs carry it", pool, captured, null,
                        () -> client.runs(RunQuery.newest().tag("region/3")));
                explain(plans, "external task by key", pool, captured, "external_task_key",
                        () -> client.externalTask("payment/" + openTask));
                explain(plans, "complete by key (rolled back)", pool, captured, "external_task_open_key", () -> {
                    try (Connection c = captured.wrap(pool.getConnection())) {
                        c.setAutoCommit(false);
                        client.complete(c, "payment/" + openTask, "ok");
                        c.rollback();
                    } catch (SQLException e) {
                        throw new IllegalStateException(e);
                    }
                });
            } finally {
                pool.close();
            }
            out.put("plans", plans);
            out.put("sizes", History.sizes(db));
            report.workloads.put("lookups", out);
            String w = "lookups (" + String.format(Locale.ROOT, "%,d", n) + " runs)";
            for (Map.Entry<String, Object> e : plans.entrySet()) {
                Map<?, ?> p = (Map<?, ?>) e.getValue();
                report.row(w, e.getKey() + ", execution ms", ((Number) p.get("executionMs")).doubleValue(), null,
                        null);
            }
        }
    }

    /**
     * Runs {@code call}, then EXPLAINs each statement it sent; with an {@code index}, refuses plans that scan a table,
     * or none of which reads that index.
     */
    private static void explain(Map<String, Object> plans, String name, HikariDataSource pool,
            CapturedStatements captured, String index, Runnable call) throws Exception {
        captured.clear();
        call.run();
        List<CapturedStatements.Statement> statements = captured.executed();
        if (statements.isEmpty()) {
            throw new IllegalStateException("lookups: " + name + " sent no statement");
        }
        List<Map<String, Object>> each = new ArrayList<>();
        double total = 0;
        boolean indexRead = index == null;
        for (CapturedStatements.Statement s : statements) {
            List<String> plan = CapturedStatements.explain(pool, s);
            Bench.progress("lookups: " + name + "\n" + s.sql() + "\n" + String.join("\n", plan));
            double ms = plan.stream().filter(l -> l.startsWith("Execution Time:"))
                    .map(l -> Double.parseDouble(l.replaceAll("[^0-9.]", ""))).findFirst().orElse(-1.0);
            total += ms;
            if (index != null && CapturedStatements.anySeqScan(plan, "run", "message", "external_task")) {
                throw new IllegalStateException("lookups: " + name + " scans a table:\n" + String.join("\n", plan));
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("sql", s.sql());
            m.put("plan", plan);
            m.put("executionMs", ms);
            each.add(m);
            indexRead |= index != null && plan.stream().anyMatch(l -> l.contains(" " + index + " "));
        }
        if (!indexRead) {
            throw new IllegalStateException("lookups: " + name + " reads no index " + index);
        }
        plans.put(name, Map.of("statements", each, "executionMs", Stats.round(total, 3)));
    }

    /** Writes the history with the indexes dropped, then builds them and analyzes. */
    static Map<String, Object> load(BenchDb db, long n) throws SQLException {
        Map<String, Object> m = new LinkedHashMap<>();
        long t0 = System.nanoTime();
        Connection c = db.admin();
        List<String> indexes = new ArrayList<>();
        db.rows("""
                SELECT i.indexdef FROM pg_indexes i
                  JOIN pg_index x ON x.indexrelid = format('%I.%I', i.schemaname, i.indexname)::regclass
                 WHERE i.schemaname = 'coop' AND i.tablename IN ('message', 'run', 'external_task')
                   AND NOT x.indisprimary""").forEach(r -> indexes.add((String) r.get("indexdef")));
        exec(c, "SET session_replication_role = replica"); // no FK checks, no notify triggers while loading
        exec(c, "SET maintenance_work_mem = '512MB'");
        for (String def : indexes) {
            exec(c, "DROP INDEX coop." + def.replaceFirst("^CREATE (UNIQUE )?INDEX (\\S+) ON .*$", "$2"));
        }
        exec(c, """
                CREATE OR REPLACE FUNCTION public.bench_lid(slot int, g bigint) RETURNS uuid LANGUAGE sql IMMUTABLE
                AS $$ SELECT (lpad(to_hex(1700000000000 + g * 250), 12, '0') || '7' || lpad(to_hex(slot), 3, '0')
                              || '8' || lpad(to_hex(g), 15, '0'))::uuid $$""");
        long chunk = 1_000_000;
        for (long from = 1; from <= n; from += chunk) {
            long to = Math.min(n, from + chunk - 1);
            insert(c, from, to, n);
            Bench.progress("lookups: inserted runs " + to + "/" + n);
        }
        m.put("insertSeconds", Stats.round((System.nanoTime() - t0) / 1e9, 1));
        long tIndex = System.nanoTime();
        for (String def : indexes) {
            exec(c, def);
        }
        exec(c, "RESET session_replication_role");
        m.put("indexSeconds", Stats.round((System.nanoTime() - tIndex) / 1e9, 1));
        for (String t : List.of("message", "run", "external_task")) {
            exec(c, "VACUUM (ANALYZE) coop." + t);
        }
        m.put("totalSeconds", Stats.round((System.nanoTime() - t0) / 1e9, 1));
        m.put("runs", db.longValue("SELECT count(*) FROM coop.run"));
        m.put("tasks", db.longValue("SELECT count(*) FROM coop.external_task"));
        m.put("openTasks", db.longValue("SELECT count(*) FROM coop.external_task WHERE state = 'OPEN'"));
        return m;
    }

    /** Runs {@code from..to}: g % 10 = 0 is a task of the run g - 1; the newest tasks are open, their parents wait. */
    private static void insert(Connection c, long from, long to, long n) throws SQLException {
        long openFrom = n - 10L * OPEN_TASKS;
        String series = "(SELECT g, to_timestamp((1700000000000 + g * 250) / 1000.0) AS at, g > " + openFrom
                + " AS open FROM generate_series(" + from + "::bigint, " + to + "::bigint) g) x";
        exec(c, "INSERT INTO coop.message (id, topic, payload, created_at, business_key, tags, root_id)"
                + " SELECT public.bench_lid(1, g), CASE WHEN g % 10 = 0 THEN '~external-task' ELSE 'orders' END,"
                + " jsonb_build_object('n', g), at,"
                + " CASE WHEN g % 10 <> 0 THEN 'order/' || g END,"
                + " CASE WHEN g % 10 <> 0 THEN ARRAY['customer/' || (g % 1000000), 'region/' || (g % 8)] END,"
                + " CASE WHEN g % 10 = 0 THEN public.bench_lid(1, g - 1) ELSE public.bench_lid(1, g) END"
                + " FROM " + series);
        exec(c, "INSERT INTO coop.run (id, message_id, saga, lineage, parent_id, parent_seq, status, step_index,"
                + " steps_done, pending_children, runnable_at, created_at, started_at, finished_at, root_id)"
                + " SELECT public.bench_lid(2, g), public.bench_lid(1, g),"
                + " CASE WHEN g % 10 = 0 THEN '~external-task' ELSE 'order-saga' END,"
                + " CASE WHEN g % 10 = 0"
                + "  THEN ARRAY[public.bench_lid(1, g - 1), public.bench_lid(2, g - 1), public.bench_lid(2, g)]"
                + "  ELSE ARRAY[public.bench_lid(1, g), public.bench_lid(2, g)] END,"
                + " CASE WHEN g % 10 = 0 THEN public.bench_lid(2, g - 1) END, CASE WHEN g % 10 = 0 THEN 0 END,"
                + " CASE WHEN open AND g % 10 IN (0, 9) THEN 'WAITING' ELSE 'COMMITTED' END,"
                + " CASE WHEN g % 10 = 0 THEN 0 ELSE 1 END, CASE WHEN g % 10 = 0 THEN 0 ELSE 1 END,"
                + " CASE WHEN open AND g % 10 = 9 THEN 1 ELSE 0 END, at, at,"
                + " CASE WHEN open AND g % 10 = 0 THEN NULL ELSE at END,"
                + " CASE WHEN open AND g % 10 IN (0, 9) THEN NULL ELSE at + interval '20 milliseconds' END,"
                + " CASE WHEN g % 10 = 0 THEN public.bench_lid(1, g - 1) ELSE public.bench_lid(1, g) END"
                + " FROM " + series);
        exec(c, "INSERT INTO coop.external_task (run_id, message_id, parent_id, parent_seq, root_id, name, token,"
                + " task_key, state, created_at, settled_at, settled_by)"
                + " SELECT public.bench_lid(2, g), public.bench_lid(1, g), public.bench_lid(2, g - 1), 0,"
                + " public.bench_lid(1, g - 1), 'payment', 'ct_' || lpad(g::text, 32, '0'), 'payment/' || g,"
                + " CASE WHEN open THEN 'OPEN' ELSE 'COMPLETED' END, at,"
                + " CASE WHEN open THEN NULL ELSE at + interval '10 milliseconds' END,"
                + " CASE WHEN open THEN NULL ELSE 'client' END"
                + " FROM " + series + " WHERE g % 10 = 0");
    }

    private static void exec(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }
}
