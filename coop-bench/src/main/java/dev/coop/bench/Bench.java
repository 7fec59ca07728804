package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.test.CoopPostgres;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Coop's benchmarks. Every workload runs on a fresh database, once to warm up and then {@code --runs}
 * times; medians are reported. Every Coop throughput is also given as a ratio to the physical limit measured in the
 * same database with the same connection count just before the run. Writes a JSON file (and the table as Markdown)
 * under {@code bench-results/} and prints a table. Exits with status 1 if any run lost or failed work.
 */
public final class Bench {
    private static final long START = System.nanoTime();

    private Bench() {
    }

    public static void main(String[] args) {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        Options o;
        try {
            o = OptionParser.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        if (o.replot != null) {
            try {
                System.out.println("Drew " + Growth.replot(o.replot, o.plot).toAbsolutePath());
                System.exit(0);
            } catch (java.io.IOException | RuntimeException e) {
                System.err.println("Could not draw " + o.plot + " from " + o.replot + ": " + e);
                System.exit(2);
            }
            return;
        }
        Report report = new Report();
        String stamp = ZonedDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        report.json.put("meta", meta(o));
        report.json.put("options", o.toMap());
        Throwable failure = null;
        try {
            BenchDb.statementStats = o.statementStats;
            CoopPostgres server = BenchDb.server(o.durable);
            try (BenchDb db = BenchDb.create("settings", false)) {
                Map<String, Object> server0 = new LinkedHashMap<>();
                server0.put("server", server.toString());
                server0.put("embedded", server.embedded());
                server0.put("settings", RunEnv.settings(db));
                server0.put("pgStatStatements", db.pgStatStatements());
                report.json.put("postgres", server0);
                progress("server " + server + " " + server0.get("settings"));
            }
            List<String> order = new java.util.ArrayList<>(Options.ALL_WORKLOADS);
            order.addAll(Options.OPTIONAL_WORKLOADS);
            for (String w : order) {
                if (o.workloads.contains(w)) {
                    progress("== " + w);
                    workload(w, o, report);
                }
            }
        } catch (Throwable t) {
            failure = t;
            report.json.put("failure", t.toString());
        }
        // another build of this checkout re-packages coop-bench and overwrites target/bench-lib: say so if it did
        Object before = ((Map<?, ?>) ((Map<?, ?>) report.json.get("meta")).get("coopCore")).get("sha256");
        Object after = jarInfo(dev.coop.CoopEngine.class).get("sha256");
        if (before != null && !before.equals(after)) {
            String warning = "The engine jar changed during the run (" + before + " -> " + after
                    + "): a build overwrote target/bench-lib; classes loaded late may come from the new jar."
                    + " Do not build this checkout while a benchmark runs.";
            report.json.put("warning", warning);
            System.err.println("WARNING: " + warning);
        }
        report.json.put("totalSeconds", Stats.round((System.nanoTime() - START) / 1e9, 1));
        report.json.put("loadAverageEnd", loadAverage());
        System.out.println();
        System.out.println("Coop benchmark " + ((Map<?, ?>) report.json.get("meta")).get("date") + ", "
                + ((Map<?, ?>) report.json.get("meta")).get("machine") + (o.quick ? " (QUICK: smoke sizes)" : ""));
        System.out.println(report.table());
        Path file = report.write(o.out, stamp);
        System.out.println("JSON: " + file.toAbsolutePath());
        System.out.println("Total " + report.json.get("totalSeconds") + " s");
        if (failure != null) {
            System.err.println();
            System.err.println("BENCHMARK FAILED: " + failure);
            failure.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    private static void workload(String w, Options o, Report report) throws Exception {
        switch (w) {
            case "phys" -> phys(o, report);
            case "w1" -> {
                Map<String, Object> all = new LinkedHashMap<>();
                for (int threads : o.w1Threads) {
                    Runs runs = Runs.repeat("w1/" + threads + " threads", o.warmups, o.runs, (i, warm) -> {
                        try (RunEnv env = RunEnv.fresh(o, "w1_" + threads, true)) {
                            return env.bracket(
                                    Throughput.w1(o, env.db, env.pool, env.physTxPerSec, o.w1Sagas, threads, "r" + i));
                        }
                    });
                    all.put(threads + "threads", runs.toMap());
                    String name = "W1 " + o.w1Sagas + " sagas x 3 steps, " + threads + " threads";
                    report.row(name, "sagas/s", runs, "sagasPerSec", null, null, null);
                    double ratio = runs.median("ratioToPhys");
                    report.row(name, "steps/s", runs, "stepsPerSec", "ratioToPhys", ">= 0.65 x phys", ratio >= 0.65);
                    report.row(name, "latency p50 ms", runs, "latencyP50Ms", null, null, null);
                    report.row(name, "latency p95 ms", runs, "latencyP95Ms", null, null, null);
                    report.row(name, "latency p99 ms", runs, "latencyP99Ms", null, null, null);
                    report.row(name, "CPU us/step, all (JVM + PostgreSQL)", runs, "cpuUsPerStep", null, null, null);
                    report.row(name, "CPU us/step, PostgreSQL", runs, "pgCpuUsPerStep", null, null, null);
                    report.row(name, "CPU us/step, engine threads", runs, "engineCpuUsPerStep", null, null, null);
                }
                report.workloads.put("w1", all);
            }
            case "w2" -> {
                Map<String, Object> all = new LinkedHashMap<>();
                for (int[] v : new int[][]{{o.w2Parents, o.w2InFlight}, {o.w2FloorParents, 1}}) {
                    int parents = v[0];
                    int inFlight = v[1];
                    if (parents == 0) {
                        continue;
                    }
                    Runs runs = Runs.repeat("w2/" + inFlight + " in flight", o.warmups, o.runs, (i, warm) -> {
                        try (RunEnv env = RunEnv.fresh(o, "w2", true)) {
                            return env.bracket(Throughput.w2(o, env.db, env.pool, env.physTxPerSec, parents, inFlight,
                                    "r" + i));
                        }
                    });
                    all.put(inFlight + "inFlight", runs.toMap());
                    boolean main = inFlight == o.w2InFlight && parents == o.w2Parents;
                    String name = "W2 fan-out " + parents + " parents x " + o.w2Children + ", " + inFlight
                            + " in flight" + (main ? "" : " (latency floor)");
                    report.row(name, "parents/s", runs, "parentsPerSec", null, null, null);
                    report.row(name, "steps/s", runs, "stepsPerSec", "ratioToPhys", null, null);
                    double p50 = runs.median("parentP50Ms");
                    report.row(name, "parent latency p50 ms", runs, "parentP50Ms", null, main ? "<= 50 ms" : null,
                            main ? p50 <= 50 : null);
                    report.row(name, "parent latency p95 ms", runs, "parentP95Ms", null, null, null);
                    report.row(name, "parent latency p99 ms", runs, "parentP99Ms", null, null, null);
                }
                report.workloads.put("w2", all);
            }
            case "w3" -> {
                Map<String, Object> all = new LinkedHashMap<>();
                for (int[] v : new int[][]{{o.w3Chains, o.w3InFlight}, {o.w3FloorChains, 1}}) {
                    int chains = v[0];
                    int inFlight = v[1];
                    if (chains == 0) {
                        continue;
                    }
                    Runs runs = Runs.repeat("w3/" + inFlight + " in flight", o.warmups, o.runs, (i, warm) -> {
                        try (RunEnv env = RunEnv.fresh(o, "w3", true)) {
                            return env.bracket(Throughput.w3(o, env.db, env.pool, env.physTxPerSec, chains, inFlight,
                                    "r" + i));
                        }
                    });
                    all.put(inFlight + "inFlight", runs.toMap());
                    boolean main = inFlight == o.w3InFlight && chains == o.w3Chains;
                    String name = "W3 depth " + chains + " chains x " + o.w3Depth + ", " + inFlight + " in flight"
                            + (main ? "" : " (latency floor)");
                    report.row(name, "chains/s", runs, "chainsPerSec", null, null, null);
                    report.row(name, "levels/s", runs, "levelsPerSec", "ratioToPhys", null, null);
                    double p50 = runs.median("chainP50Ms");
                    report.row(name, "chain latency p50 ms", runs, "chainP50Ms", null, main ? "<= 30 ms" : null,
                            main ? p50 <= 30 : null);
                    report.row(name, "chain latency p99 ms", runs, "chainP99Ms", null, null, null);
                }
                report.workloads.put("w3", all);
            }
            case "wakeup" -> {
                Map<String, Object> all = new LinkedHashMap<>();
                for (String mode : List.of("notify", "local", "poll")) {
                    boolean poll = mode.equals("poll");
                    int samples = poll ? o.wakePollSamples : o.wakeSamples;
                    int inFlight = poll ? o.wakePollSamples : o.wakeInFlight;
                    Runs runs = Runs.repeat("wakeup/" + mode, o.warmups, o.runs, (i, warm) -> {
                        try (RunEnv env = RunEnv.fresh(o, "wake_" + mode, false)) {
                            return WakeUp.once(o, env, mode, samples, inFlight, "r" + i);
                        }
                    });
                    all.put(mode, runs.toMap());
                    String name = switch (mode) {
                        case "notify" -> "wake-up, 2 engines, LISTEN/NOTIFY";
                        case "local" -> "wake-up, 1 engine (in-process wake)";
                        default -> "wake-up, 2 engines, poll-only (" + o.pollMs + " ms)";
                    };
                    name += poll ? ", " + samples + " launched over 3 polls" : ", " + inFlight + " in flight";
                    report.row(name, "child commit -> parent step p50 ms", runs, "wakeP50Ms", null, null, null);
                    double p99 = runs.median("wakeP99Ms");
                    report.row(name, "child commit -> parent step p99 ms", runs, "wakeP99Ms", null,
                            mode.equals("notify") ? "<= 10 ms" : null, mode.equals("notify") ? p99 <= 10 : null);
                }
                report.workloads.put("wakeup", all);
            }
            case "taskwake" -> {
                Runs runs = Runs.repeat("taskwake", o.warmups, o.runs, (i, warm) -> {
                    try (RunEnv env = RunEnv.fresh(o, "taskwake", false)) {
                        return TaskWake.once(o, env, o.taskWakeSamples, "r" + i);
                    }
                });
                report.workloads.put("taskwake", runs.toMap());
                String name = "external task completed by another client, 1 at a time";
                report.row(name, "complete() -> next step p50 ms", runs, "wakeP50Ms", null, null, null);
                double p99 = runs.median("wakeP99Ms");
                report.row(name, "complete() -> next step p99 ms", runs, "wakeP99Ms", null, "<= 10 ms", p99 <= 10);
                report.row(name, "complete() -> next step max ms", runs, "wakeMaxMs", null, null, null);
                report.row(name, "complete() call p50 ms (caller)", runs, "callP50Ms", null, null, null);
                report.row(name, "complete() call p99 ms (caller)", runs, "callP99Ms", null, null, null);
                double trips = runs.median("roundTripsPerCompletion");
                report.row(name, "caller's round trips per completion", runs, "roundTripsPerCompletion", null, "<= 1",
                        trips <= 1);
            }
            case "timers" -> {
                int samples = o.quick ? 50 : 200;
                Runs runs = Runs.repeat("timers", o.warmups, o.runs, (i, warm) -> {
                    try (RunEnv env = RunEnv.fresh(o, "timers", false)) {
                        return Timers.once(o, env, samples, "r" + i);
                    }
                });
                report.workloads.put("timers", runs.toMap());
                String name = "due times, " + samples + " delayed launches over 2 s, idle engine";
                report.row(name, "start after due p50 ms", runs, "latenessP50Ms", null, null, null);
                double p99 = runs.median("latenessP99Ms");
                report.row(name, "start after due p99 ms", runs, "latenessP99Ms", null, "<= 100 ms", p99 <= 100);
                report.row(name, "start after due max ms", runs, "latenessMaxMs", null, null, null);
            }
            case "history" -> History.run(o, report);
            case "prune" -> Prune.run(o, report);
            case "idle" -> Idle.run(o, report);
            case "bigfanout" -> {
                Runs runs = Runs.repeat("bigfanout", o.warmups, o.runs, (i, warm) -> {
                    try (RunEnv env = RunEnv.fresh(o, "bigfanout", true)) {
                        return env.bracket(BigFanOut.once(o, env, "r" + i));
                    }
                });
                report.workloads.put("bigfanout", runs.toMap());
                String name = "big fan-out, 1 step emits " + String.format(Locale.ROOT, "%,d", o.bigFanout);
                double commit = runs.median("stepCommitMs");
                report.row(name, "step commit ms (body end -> commit done)", runs, "stepCommitMs", null, "< 1000 ms",
                        commit < 1000);
                report.row(name, "  of which emit statement ms", runs, "emitStatementMs", null, null, null);
                report.row(name, "  of which COMMIT ms", runs, "commitMs", null, null, null);
                report.row(name, "step body ms (10k launch() calls)", runs, "bodyMs", null, null, null);
                report.row(name, "all children finished, ms after commit", runs, "allChildrenDoneAfterCommitMs", null,
                        null, null);
                report.row(name, "child runs/s", runs, "childRunsPerSec", "ratioToPhys", null, null);
                report.row(name, "claim p50 / p99 ms", runs, "claimP50Ms", null, null, null);
                report.row(name, "claim p99 ms", runs, "claimP99Ms", null, null, null);
            }
            case "profile" -> Profile.run(o, report);
            case "observed" -> Observed.run(o, report);
            case "experiments" -> Experiments.run(o, report);
            case "versus" -> Versus.run(o, report);
            case "ab" -> AbTest.run(o, report);
            case "growth" -> Growth.run(o, report);
            case "sweep" -> Growth.sweep(o, report);
            case "limits" -> LimitsAb.run(o, report);
            case "options" -> LaunchOptionsAb.run(o, report);
            case "spring" -> SpringPath.run(o, report);
            case "lookups" -> Lookups.run(o, report);
            case "citus" -> CitusCost.run(o, report);
            default -> throw new IllegalArgumentException(w);
        }
    }

    private static void phys(Options o, Report report) {
        long[] rowBytes = new long[1];
        Runs runs = Runs.repeat("phys", o.warmups, o.runs, (i, warm) -> physOnce(o, rowBytes));
        report.workloads.put("phys", runs.toMap());
        report.row("physical limit, " + o.poolSize() + " connections", "transactions/s (insert ~"
                + rowBytes[0] + " B row + update, commit)", runs, "txPerSec", "ratioToPhys", null, null);
        report.row("physical limit, " + o.poolSize() + " connections", "CPU us/tx, all (JVM + PostgreSQL)", runs,
                "cpuUsPerTx", null, null, null);
        report.row("physical limit, " + o.poolSize() + " connections", "CPU us/tx, PostgreSQL", runs, "pgCpuUsPerTx",
                null, null, null);
    }

    /** One run of the physical limit on a fresh database; {@code rowBytes[0]} gets the reference row's size. */
    static Map<String, Object> physOnce(Options o, long[] rowBytes) {
        try (BenchDb db = BenchDb.create("phys", o.keep)) {
            Cpu.locatePostgres(db);
            PhysicalLimit.setup(db);
            HikariDataSource pool = db.pool(o.poolSize(), "phys");
            Cpu.Snapshot c0 = Cpu.take();
            double tps = PhysicalLimit.run(pool, o.poolSize(), o.physTx);
            Cpu.Snapshot c1 = Cpu.take();
            rowBytes[0] = PhysicalLimit.averageRowBytes(db);
            long rows = db.longValue("SELECT count(*) FROM bench_phys.log");
            long updates = db.longValue("SELECT sum(counter) FROM bench_phys.state");
            if (rows != o.physTx || updates != o.physTx) {
                throw new IllegalStateException("physical limit: expected " + o.physTx + " rows and updates, found "
                        + rows + " and " + updates);
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("txPerSec", Stats.round(tps, 1));
            m.put("ratioToPhys", 1.0);
            m.put("rowBytes", rowBytes[0]);
            m.put("connections", o.poolSize());
            Cpu.perUnit(m, c0, c1, o.physTx, "Tx");
            m.put("cpu", Cpu.between(c0, c1));
            return m;
        }
    }

    static void progress(String s) {
        System.err.printf(Locale.ROOT, "[bench %6.1fs] %s%n", (System.nanoTime() - START) / 1e9, s);
    }

    private static Map<String, Object> meta(Options o) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("date", ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME));
        String cpu = "?";
        long memKb = 0;
        try {
            cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .findFirst().map(l -> l.substring(l.indexOf(':') + 1).strip()).orElse("?");
            memKb = Files.readAllLines(Path.of("/proc/meminfo")).stream().filter(l -> l.startsWith("MemTotal"))
                    .findFirst().map(l -> Long.parseLong(l.replaceAll("\\D+", ""))).orElse(0L);
        } catch (IOException | RuntimeException ignored) {
            // not Linux: leave unknown
        }
        int cores = Runtime.getRuntime().availableProcessors();
        m.put("machine", cores + " cores, " + cpu + ", " + memKb / 1024 / 1024 + " GiB");
        m.put("cores", cores);
        m.put("cpuModel", cpu);
        m.put("memoryKb", memKb);
        m.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
        m.put("java", Runtime.version().toString() + " " + System.getProperty("java.vm.name"));
        m.put("jvmArgs", ManagementFactory.getRuntimeMXBean().getInputArguments());
        m.put("loadAverageStart", loadAverage());
        m.put("coopCore", jarInfo(dev.coop.CoopEngine.class));
        m.put("note", "Shared 2-core machine: read absolute numbers with the ratio to the physical limit and the"
                + " otherTenantsCores of each run (CPU used by other processes during the run).");
        return m;
    }

    /** Which build of the engine ran: the jar's path, size, time and SHA-256 prefix. */
    private static Map<String, Object> jarInfo(Class<?> c) {
        Map<String, Object> m = new LinkedHashMap<>();
        try {
            Path jar = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
            m.put("path", jar.toString());
            if (Files.isRegularFile(jar)) {
                m.put("bytes", Files.size(jar));
                m.put("modified", Files.getLastModifiedTime(jar).toString());
                byte[] digest = java.security.MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(jar));
                m.put("sha256", java.util.HexFormat.of().formatHex(digest).substring(0, 16));
            }
        } catch (Exception e) {
            m.put("error", e.toString());
        }
        return m;
    }

    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).strip();
        } catch (IOException e) {
            return "?";
        }
    }
}
