package dev.coop.bench;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.bench.Payloads.Job;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * Idle cost: one engine with many registered sagas and no work at all. Measures the engine's own CPU (its threads),
 * the JVM's, the CPU of the engine's database backends, and what it sends to the database: JDBC round trips counted
 * on the client, transactions from pg_stat_database, statements from pg_stat_statements when the server has it, and
 * any scan of the log tables (event, message), which should be none.
 */
final class Idle {
    private Idle() {
    }

    static Runs run(Options o, Report report) throws Exception {
        SqlStats stats = new SqlStats();
        try (RunEnv env = RunEnv.fresh(o, "idle", false)) {
            BenchDb db = env.db;
            boolean pss = db.pgStatStatements();
            DataSource ds = stats.wrap(env.pool);
            List<Saga<?>> sagas = new ArrayList<>();
            for (int i = 0; i < o.idleSagas; i++) {
                Topic<Job> topic = Topic.of("idle-topic-" + i, Job.class);
                sagas.add(Saga.on(topic, "idle-saga-" + i).step("only", s -> {
                }).build());
            }
            try (CoopEngine engine = Coop.engine(ds).workers(o.workers).register(sagas.toArray(Saga<?>[]::new))
                    .start()) {
                int[] seconds = {o.idleWarmupSeconds, o.idleSeconds};
                Runs runs = Runs.repeat("idle", o.warmups, o.runs,
                        (i, warm) -> window(db, stats, pss, warm ? seconds[0] : seconds[1], env.pool.getPoolName()));
                Map<String, Object> extra = new LinkedHashMap<>();
                extra.put("pgStatStatements", pss);
                extra.put("sagas", o.idleSagas);
                extra.put("workers", o.workers);
                report.workloads.put("idle", merge(runs.toMap(), extra));
                boolean noScans = runs.median("logTableScans") == 0;
                double cpu = runs.median("engineThreadCpuPctOfCore");
                report.row("idle (" + o.idleSagas + " sagas, " + o.idleSeconds + " s)", "engine thread CPU % of a core",
                        runs, "engineThreadCpuPctOfCore", null, "< 1 %", cpu < 1.0);
                report.row("idle (" + o.idleSagas + " sagas, " + o.idleSeconds + " s)", "JVM process CPU % of a core",
                        runs, "jvmCpuPctOfCore", null, null, null);
                report.row("idle (" + o.idleSagas + " sagas, " + o.idleSeconds + " s)",
                        "engine's DB backends CPU % of a core", runs, "backendCpuPctOfCore", null, null, null);
                report.row("idle (" + o.idleSagas + " sagas, " + o.idleSeconds + " s)", "JDBC round trips / min",
                        runs, "roundTripsPerMin", null, null, null);
                report.row("idle (" + o.idleSagas + " sagas, " + o.idleSeconds + " s)",
                        "statements / min" + (pss ? " (pg_stat_statements)" : " (JDBC)"), runs,
                        pss ? "pgStatStatementsCallsPerMin" : "statementsPerMin", null, null, null);
                report.row("idle (" + o.idleSagas + " sagas, " + o.idleSeconds + " s)", "xact_commit / min", runs,
                        "xactCommitPerMin", null, null, null);
                report.row("idle (" + o.idleSagas + " sagas, " + o.idleSeconds + " s)",
                        "event+message table scans", runs, "logTableScans", null, "0 (no per-tick log scans)",
                        noScans);
                return runs;
            }
        }
    }

    private static Map<String, Object> merge(Map<String, Object> a, Map<String, Object> b) {
        Map<String, Object> m = new LinkedHashMap<>(b);
        m.putAll(a);
        return m;
    }

    private static Map<String, Object> window(BenchDb db, SqlStats stats, boolean pss, int seconds, String poolName)
            throws InterruptedException {
        List<Long> backends = db.rows("SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                + " AND application_name = ?", poolName).stream()
                .map(r -> ((Number) r.get("pid")).longValue()).toList();
        if (pss) {
            db.exec("SELECT pg_stat_statements_reset()");
        }
        Map<String, Object> before = RunEnv.dbCounters(db);
        stats.reset();
        long backend0 = Cpu.processNanos(backends);
        Cpu.Snapshot c0 = Cpu.take();
        Thread.sleep(seconds * 1000L);
        Cpu.Snapshot c1 = Cpu.take();
        long backend1 = Cpu.processNanos(backends);
        Map<String, Object> after = RunEnv.dbCounters(db);
        Map<String, Object> d = RunEnv.delta(db, before, after);
        double wall = (c1.wallNanos() - c0.wallNanos()) / 1e9;
        double perMin = 60.0 / wall;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("engineThreadCpuPctOfCore", Stats.round((c1.engineThreadsNanos() - c0.engineThreadsNanos()) / 1e9 / wall
                * 100, 3));
        m.put("jvmCpuPctOfCore", Stats.round((c1.jvmNanos() - c0.jvmNanos()) / 1e9 / wall * 100, 3));
        if (backend0 >= 0) {
            m.put("backendCpuPctOfCore", Stats.round((backend1 - backend0) / 1e9 / wall * 100, 3));
        }
        m.put("engineCpuMsPerMin", Stats.round((c1.engineThreadsNanos() - c0.engineThreadsNanos()) / 1e6 * perMin, 1));
        m.put("roundTripsPerMin", Stats.round(stats.total("engine", true) * perMin, 1));
        m.put("statementsPerMin", Stats.round(stats.total("engine", false) * perMin, 1));
        m.put("xactCommitPerMin", Stats.round(((Number) d.get("xact_commit")).longValue() * perMin, 1));
        long logScans = 0;
        for (String t : List.of("event", "message")) {
            logScans += num(d.get(t + ".seq_scan")) + num(d.get(t + ".idx_scan"));
        }
        m.put("logTableScans", logScans);
        m.put("runTableIdxScansPerMin", Stats.round(num(d.get("run.idx_scan")) * perMin, 1));
        m.put("runTableSeqScansPerMin", Stats.round(num(d.get("run.seq_scan")) * perMin, 1));
        if (pss) {
            List<Map<String, Object>> statements = db
                    .rows("""
                            SELECT calls, rows, round(mean_exec_time::numeric, 4) AS mean_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 120) AS query
                              FROM pg_stat_statements
                             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                               AND query NOT ILIKE '%pg_stat%' AND query NOT ILIKE '%pg_current_wal_lsn%'
                               AND query NOT ILIKE '%pg_wal_lsn_diff%' AND query NOT ILIKE '%pg_backend_pid%'
                             ORDER BY calls DESC""");
            long calls = statements.stream().mapToLong(r -> num(r.get("calls"))).sum();
            m.put("pgStatStatementsCallsPerMin", Stats.round(calls * perMin, 1));
            m.put("pgStatStatements", statements);
        }
        m.put("seconds", Stats.round(wall, 2));
        m.put("jdbc", stats.table(1));
        m.put("dbDelta", d);
        m.put("cpu", Cpu.between(c0, c1));
        return m;
    }

    static long num(Object o) {
        return o instanceof Number n ? n.longValue() : 0;
    }
}
