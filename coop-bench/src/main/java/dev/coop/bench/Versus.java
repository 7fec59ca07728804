package dev.coop.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The side-by-side comparison (docs/performance.md): the physical limit, Coop, DBOS Transact and db-scheduler on the
 * same server, settings, connection count and JVM, each run on a fresh database. The runs are interleaved round by
 * round (one warm-up round, then {@code --runs} measured ones), so that drift on a shared machine hits every system
 * alike; every run records the machine's load. The table gives medians and ratios of medians.
 */
final class Versus {
    private final Options o;
    private final Map<String, Runs> runs = new LinkedHashMap<>();

    private Versus(Options o) {
        this.o = o;
    }

    static void run(Options o, Report report) {
        Versus v = new Versus(o);
        for (int round = 0; round < o.warmups + o.runs; round++) {
            v.round(round < o.warmups, round);
        }
        Map<String, Object> all = new LinkedHashMap<>();
        v.runs.forEach((k, r) -> all.put(k, r.toMap()));
        report.workloads.put("versus", all);
        String table = v.table();
        report.json.put("versusTable", table);
        report.extra(table);
        ServerTables server = new ServerTables(v.runs, o.profiledThreads());
        String serverTable = server.tables();
        report.json.put("versusServerTable", serverTable);
        report.extra(serverTable);
    }

    private void round(boolean warm, int round) {
        String label = warm ? "warm-up" : "run " + (round - o.warmups + 1) + "/" + o.runs;
        long[] rowBytes = new long[1];
        add("phys", warm, label, () -> Bench.physOnce(o, rowBytes));
        for (int threads : o.versusThreads) {
            ServerProfile.Mode profile = !warm && threads == o.profiledThreads() ? ServerProfile.Mode.STATEMENTS : null;
            w1(threads, "", profile, warm, label);
            if (o.perf && profile != null && round == o.warmups) { // perf's own runs: its sampling costs CPU
                w1(threads, " perf", ServerProfile.Mode.PERF, false, label);
            }
        }
        int slow = o.slowThreads();
        add("coop slow w1", warm, label, () -> coopSlow(slow));
        add("dbos slow w1", warm, label, () -> DbosRunner.run(o, "w1", o.slowSagas, slow, true));
        add("db-scheduler slow w1", warm, label, () -> DbSchedulerRunner.w1(o, o.slowSagas, slow, true));
        add("coop w2", warm, label, () -> coop("w2", o.w2InFlight));
        add("dbos w2", warm, label, () -> DbosRunner.run(o, "w2", o.w2Parents, o.w2InFlight));
        add("coop w3", warm, label, () -> coop("w3", o.w3InFlight));
        add("dbos w3", warm, label, () -> DbosRunner.run(o, "w3", o.w3Chains, o.w3InFlight));
    }

    private Map<String, Object> coop(String workload, int threads) {
        try (RunEnv env = RunEnv.fresh(o, "vs_" + workload, false)) {
            return switch (workload) {
                case "w2" -> Throughput.w2(o, env.db, env.pool, Double.NaN, o.w2Parents, threads, "vs");
                default -> Throughput.w3(o, env.db, env.pool, Double.NaN, o.w3Chains, threads, "vs");
            };
        }
    }

    /** W1 of each system, run names ending in {@code suffix}; observed on the server with a {@code profile}. */
    private void w1(int threads, String suffix, ServerProfile.Mode profile, boolean warm, String label) {
        int sagas = o.w1SagasAt(threads);
        add("coop w1 " + threads + suffix, warm, label, () -> coopW1(threads, profile));
        add("dbos w1 " + threads + suffix, warm, label,
                () -> DbosRunner.run(o, "w1", sagas, threads, false, profile));
        add("db-scheduler w1 " + threads + suffix, warm, label,
                () -> DbSchedulerRunner.w1(o, sagas, threads, false, profile));
    }

    /** W1; with a {@code profile}, its measured window observed on the server ({@link ServerProfile}). */
    private Map<String, Object> coopW1(int threads, ServerProfile.Mode profile) {
        try (RunEnv env = RunEnv.fresh(o, "vs_w1", false)) {
            int sagas = o.w1SagasAt(threads);
            ServerProfile server = profile == null ? null : new ServerProfile(o, env.db, "Coop", profile);
            Map<String, Object> m = Throughput.w1(o, env.db, env.pool, Double.NaN, sagas, threads, "vs", server);
            if (server != null) {
                env.pool.close();
                ServerTables.put(m, server.finish(sagas, 3L * sagas));
            }
            return m;
        }
    }

    /** W1 with every commit delayed 100 ms ({@link BenchDb#slowCommits}). */
    private Map<String, Object> coopSlow(int threads) {
        BenchDb db = BenchDb.create("vs_slow", o.keep);
        try {
            db.slowCommits();
            try (RunEnv env = RunEnv.on(o, db, "vs_slow", false, true)) {
                return Throughput.w1(o, env.db, env.pool, Double.NaN, o.slowSagas, threads, "vs");
            }
        } catch (RuntimeException e) {
            db.close();
            throw e;
        }
    }

    private void add(String name, boolean warm, String label, Supplier<Map<String, Object>> body) {
        String load = Bench.loadAverage();
        long start = System.nanoTime();
        Map<String, Object> m = body.get();
        m.put("wallSeconds", Stats.round((System.nanoTime() - start) / 1e9, 1));
        m.put("loadAverageBefore", load);
        m.put("load1Before", load1(load));
        runs.computeIfAbsent(name, Runs::new).add(m, warm, label);
    }

    private static double load1(String loadavg) {
        try {
            return Double.parseDouble(loadavg.split(" ")[0]);
        } catch (RuntimeException e) {
            return Double.NaN;
        }
    }

    private double median(String name, String key) {
        Runs r = runs.get(name);
        return r == null ? Double.NaN : r.median(key);
    }

    /** The Markdown table that leads docs/performance.md. */
    String table() {
        double phys = median("phys", "txPerSec");
        List<String> rows = new ArrayList<>();
        rows.add(
                "| Workload | System | Median | Runs min..max | vs limit | Coop vs this | Load before (1 min, median) |");
        rows.add("|---|---|---:|---:|---:|---:|---:|");
        rows.add(row("Physical limit, " + o.poolSize() + " connections (tx/s)", "PostgreSQL", "phys", "txPerSec",
                phys, Double.NaN));
        for (int threads : o.versusThreads) {
            String w = "W1, " + threads + " threads (steps/s)";
            double coop = median("coop w1 " + threads, "stepsPerSec");
            rows.add(row(w, "Coop", "coop w1 " + threads, "stepsPerSec", phys, Double.NaN));
            rows.add(row(w, "DBOS Transact", "dbos w1 " + threads, "stepsPerSec", phys, coop));
            rows.add(row(w, "db-scheduler", "db-scheduler w1 " + threads, "stepsPerSec", phys, coop));
            rows.add(row("W1, " + threads + " threads (latency p50 ms)", "Coop", "coop w1 " + threads,
                    "latencyP50Ms", Double.NaN, Double.NaN));
            rows.add(row("W1, " + threads + " threads (latency p50 ms)", "DBOS Transact", "dbos w1 " + threads,
                    "latencyP50Ms", Double.NaN, Double.NaN));
        }
        String slow = "W1 with 100 ms commits, " + o.slowThreads() + " threads (steps/s)";
        double coopSlow = median("coop slow w1", "stepsPerSec");
        rows.add(row(slow, "Coop", "coop slow w1", "stepsPerSec", Double.NaN, Double.NaN));
        rows.add(row(slow, "DBOS Transact", "dbos slow w1", "stepsPerSec", Double.NaN, coopSlow));
        rows.add(row(slow, "db-scheduler", "db-scheduler slow w1", "stepsPerSec", Double.NaN, coopSlow));
        double coopW2 = median("coop w2", "parentP50Ms");
        rows.add(row("W2 fan-out, " + o.w2InFlight + " in flight (parent p50 ms)", "Coop", "coop w2", "parentP50Ms",
                Double.NaN, Double.NaN));
        rows.add(rowLatency("W2 fan-out, " + o.w2InFlight + " in flight (parent p50 ms)", "DBOS Transact",
                "dbos w2", "latencyP50Ms", coopW2));
        double coopW3 = median("coop w3", "chainP50Ms");
        rows.add(row("W3 depth " + o.w3Depth + ", " + o.w3InFlight + " in flight (chain p50 ms)", "Coop", "coop w3",
                "chainP50Ms", Double.NaN, Double.NaN));
        rows.add(rowLatency("W3 depth " + o.w3Depth + ", " + o.w3InFlight + " in flight (chain p50 ms)",
                "DBOS Transact", "dbos w3", "latencyP50Ms", coopW3));
        cpuRows(rows);
        return String.join("\n", rows);
    }

    /** CPU per step (JVM + PostgreSQL, and PostgreSQL's alone) of W1 and W2; Coop's divided by each peer's. */
    private void cpuRows(List<String> rows) {
        List<String[]> workloads = new ArrayList<>();
        for (int threads : o.versusThreads) {
            workloads.add(new String[]{"W1, " + threads + " threads", "w1 " + threads});
        }
        workloads.add(new String[]{"W2 fan-out", "w2"});
        for (String[] w : workloads) {
            for (String[] key : new String[][]{{"cpuUsPerStep", "CPU µs per step"},
                    {"pgCpuUsPerStep", "PostgreSQL CPU µs per step"}}) {
                String workload = w[0] + " (" + key[1] + ")";
                double coop = median("coop " + w[1], key[0]);
                rows.add(rowLatency(workload, "Coop", "coop " + w[1], key[0], Double.NaN));
                for (String[] peer : new String[][]{{"DBOS Transact", "dbos "}, {"db-scheduler", "db-scheduler "}}) {
                    if (runs.containsKey(peer[1] + w[1])) {
                        rows.add(rowLatency(workload, peer[0], peer[1] + w[1], key[0], coop));
                    }
                }
            }
        }
    }

    /** A throughput row: ratio to the limit, and Coop's throughput divided by this system's. */
    private String row(String workload, String system, String name, String key, double phys, double coop) {
        Runs r = runs.get(name);
        double v = median(name, key);
        return String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s |", workload, system, Report.fmt(v),
                r == null ? "" : r.spread(key), Double.isNaN(phys) ? "" : Report.fmt(v / phys),
                Double.isNaN(coop) ? "" : Report.fmt(coop / v) + "x", load(r));
    }

    /** The machine's median 1-minute load average before this system's runs. */
    private static String load(Runs r) {
        return r == null ? "" : Report.fmt(r.median("load1Before"));
    }

    /**
     * A latency or cost row: Coop's value divided by this system's (below 1: Coop is faster or cheaper); none when
     * {@code coop} is NaN (Coop's own row).
     */
    private String rowLatency(String workload, String system, String name, String key, double coop) {
        Runs r = runs.get(name);
        double v = median(name, key);
        String ratio = Double.isNaN(coop) ? "" : (key.endsWith("P50Ms") ? "p50 " : "") + Report.fmt(coop / v) + "x";
        return String.format(Locale.ROOT, "| %s | %s | %s | %s | | %s | %s |", workload, system, Report.fmt(v),
                r == null ? "" : r.spread(key), ratio, load(r));
    }
}
