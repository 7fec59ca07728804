package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.bench.Payloads.Job;
import dev.coop.bench.Payloads.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * How cost grows (docs/performance.md, docs/scaling.md): the cost of a step against fan-out width, chain depth and the
 * number of engines on one database. Every measurement starts its engines on a fresh database, each engine with a
 * pool of its own (workers + 2 connections), all in this JVM; client threads launch and await through the engines'
 * clients in turn. A step's cost: JDBC round trips and statements (counted by {@link SqlStats} on every pool), server
 * transactions, WAL bytes ({@code pg_current_wal_lsn()} before and after), PostgreSQL CPU (its processes in /proc) and
 * JVM CPU (the process, and the engines' threads alone).
 */
final class Growth {
    private Growth() {
    }

    /** One closed loop: the sagas every engine registers, what a client thread launches, how many, and the check. */
    record Shape(String tag, List<Saga<?>> sagas, BiFunction<CoopClient, Integer, MessageId> launch, int total,
            int inFlight, double steps, Consumer<BenchDb> verify) {
    }

    static void run(Options o, Report report) {
        Map<String, Object> out = new LinkedHashMap<>();
        warmUp(o);
        Map<String, Object> width = new LinkedHashMap<>();
        for (int w : o.growthWidths) {
            Map<String, Object> m = measure(o, fanOut(o, w), 1, true);
            width.put(Integer.toString(w), m);
            costRows(report, "fan-out width " + w + " (" + m.get("hierarchies") + " parents)", m);
        }
        out.put("width", width);
        Map<String, Object> depth = new LinkedHashMap<>();
        for (int d : o.growthDepths) {
            Map<String, Object> m = measure(o, chain(o, d), 1, true);
            depth.put(Integer.toString(d), m);
            costRows(report, "depth " + d + " (" + m.get("hierarchies") + " chains)", m);
        }
        out.put("depth", depth);
        Map<String, Object> engines = new LinkedHashMap<>();
        Map<Integer, Map<String, Object>> counted = new LinkedHashMap<>();
        Map<Integer, Runs> plain = new LinkedHashMap<>();
        for (int e : o.growthEngines) {
            counted.put(e, measure(o, w1(o, o.growthSagas, o.growthThreads, "c" + e), e, true));
            plain.put(e, new Runs("growth engines " + e));
        }
        // the plain runs alternate between engine counts (1, 2, 3, 1, 2, 3, ...): drift of a shared machine's load
        // hits every count alike
        for (int i = 0; i < o.runs; i++) {
            for (int e : o.growthEngines) {
                String tag = "e" + e + "r" + i;
                plain.get(e).add(measure(o, w1(o, o.growthSagas, o.growthThreads, tag), e, false), false,
                        "run " + (i + 1));
            }
        }
        for (int e : o.growthEngines) {
            Runs runs = plain.get(e);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("counted", counted.get(e));
            m.put("plain", runs.toMap());
            engines.put(Integer.toString(e), m);
            String name = "engines " + e + " on one database, W1 " + o.growthThreads + " threads";
            report.row(name, "steps/s", runs, "stepsPerSec", null, null, null);
            report.row(name, "latency p50 ms", runs, "latencyP50Ms", null, null, null);
            report.row(name, "CPU us/step, PostgreSQL", runs, "pgCpuUsPerStep", null, null, null);
            report.row(name, "CPU us/step, JVM", runs, "jvmCpuUsPerStep", null, null, null);
            report.row(name, "machine busy cores", runs, "machineBusyCores", null, null, null);
            report.row(name, "WAL bytes/step", runs, "walBytesPerStep", null, null, null);
            report.row(name, "engine round trips/step (counted run)",
                    num(counted.get(e), "engineRoundTripsPerStep"), null, null);
            report.row(name, "claims that found nothing/step (counted run)",
                    num(counted.get(e), "emptyClaimsPerStep"), null, null);
        }
        out.put("engines", engines);
        report.workloads.put("growth", out);
    }

    /**
     * Threads against throughput (W1, one series per engine count), drawn into a PNG from the runs' own numbers. The
     * engine counts alternate within each thread count and run (1, 3, 1, 3, ...), so that drift of a shared machine's
     * load hits every line alike. Runs with few threads get fewer sagas (at least 100 per thread, at least 300).
     */
    static void sweep(Options o, Report report) {
        warmUp(o);
        Map<String, Object> out = new LinkedHashMap<>();
        Map<Integer, Plot.Series> series = new LinkedHashMap<>();
        Map<Integer, Map<String, Object>> points = new LinkedHashMap<>();
        for (int e : o.sweepEngines) {
            series.put(e, new Plot.Series(e == 1 ? "1 engine" : e + " engines"));
            points.put(e, new LinkedHashMap<>());
        }
        for (int t : o.sweepThreads) {
            int sagas = sweepSagas(o, t);
            Map<Integer, Runs> byEngines = new LinkedHashMap<>();
            for (int e : o.sweepEngines) {
                byEngines.put(e, new Runs("sweep " + e + " engines " + t + " threads"));
            }
            for (int i = 0; i < o.runs; i++) {
                for (int e : o.sweepEngines) {
                    String tag = "s" + e + "t" + t + "r" + i;
                    byEngines.get(e).add(measure(o, w1(o, sagas, t, tag), e, false), false, "run " + (i + 1));
                }
            }
            for (int e : o.sweepEngines) {
                Runs runs = byEngines.get(e);
                points.get(e).put(Integer.toString(t), runs.toMap());
                series.get(e).add(t, runs.median("stepsPerSec"), min(runs, "stepsPerSec"), max(runs, "stepsPerSec"));
                String name = "W1 " + sagas + " sagas, " + e + " engine(s), " + t + " threads";
                report.row(name, "steps/s", runs, "stepsPerSec", null, null, null);
                report.row(name, "latency p50 ms", runs, "latencyP50Ms", null, null, null);
                report.row(name, "machine busy cores", runs, "machineBusyCores", null, null, null);
            }
        }
        points.forEach((e, p) -> out.put(Integer.toString(e), p));
        List<String> subtitle = subtitle(sweepSagas(o, o.sweepThreads[0]) + "-" + o.sweepSagas, o.runs, o.workers,
                o.poolSize(), o.durable, Runtime.getRuntime().availableProcessors(),
                Bench.loadAverage().split(" ")[0], java.time.LocalDate.now().toString());
        java.nio.file.Path png = Plot.draw(o.plot, TITLE, subtitle, "client threads", "steps/s",
                List.copyOf(series.values()));
        out.put("png", png.toString());
        report.text("sweep", "plot", png.toString());
        report.workloads.put("sweep", out);
    }

    private static final String TITLE = "Coop throughput against client threads";

    private static List<String> subtitle(String sagas, int runs, int workers, int pool, boolean durable, int cores,
            String load, String date) {
        return List.of("W1 (3 no-op steps), " + sagas + " sagas per run, median of " + runs
                + " runs (bars: min..max), engine counts interleaved, " + workers + " workers and " + pool
                + " connections per engine",
                (durable ? "durable commits" : "fsync off") + ", " + cores
                        + " cores shared by the JVM, PostgreSQL and other tenants; load average (1 min) " + load
                        + " at the end, " + date);
    }

    /** Draws the sweep's PNG again from the JSON of an earlier run ({@code --replot FILE}): its own numbers. */
    static java.nio.file.Path replot(java.nio.file.Path json, java.nio.file.Path png) throws java.io.IOException {
        var root = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json.toFile());
        var sweep = root.path("workloads").path("sweep");
        var options = root.path("options");
        if (sweep.isMissingNode()) {
            throw new IllegalArgumentException(json + " holds no sweep workload");
        }
        List<Plot.Series> series = new ArrayList<>();
        int minSagas = Integer.MAX_VALUE;
        for (var engines = sweep.fieldNames(); engines.hasNext();) {
            String e = engines.next();
            if (e.equals("png")) {
                continue;
            }
            Plot.Series s = new Plot.Series(e.equals("1") ? "1 engine" : e + " engines");
            for (var threads = sweep.path(e).fields(); threads.hasNext();) {
                var point = threads.next();
                List<Double> values = new ArrayList<>();
                point.getValue().path("runs").forEach(r -> values.add(r.path("stepsPerSec").asDouble()));
                minSagas = Math.min(minSagas, point.getValue().path("runs").path(0).path("hierarchies").asInt());
                s.add(Integer.parseInt(point.getKey()), Stats.median(values),
                        values.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN),
                        values.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN));
            }
            series.add(s);
        }
        String date = root.path("meta").path("date").asText();
        List<String> subtitle = subtitle(minSagas + "-" + options.path("sweepSagas").asInt(),
                options.path("runs").asInt(), options.path("workers").asInt(), options.path("poolSize").asInt(),
                options.path("durability").asText().equals("durable"), root.path("meta").path("cores").asInt(),
                root.path("loadAverageEnd").asText().split(" ")[0], date.length() >= 10 ? date.substring(0, 10) : date);
        return Plot.draw(png, TITLE, subtitle, "client threads", "steps/s", series);
    }

    private static int sweepSagas(Options o, int threads) {
        return Math.min(o.sweepSagas, Math.max(300, 100 * threads));
    }

    /** One W1 run before the measurements, so that the first one does not pay for the JIT. */
    private static void warmUp(Options o) {
        Map<String, Object> m = measure(o, w1(o, Math.min(o.growthSagas, 1_000), 16, "warm"), 1, false);
        Bench.progress("growth warm-up: " + Runs.summary(m));
    }

    static Shape fanOut(Options o, int width) {
        String tag = "w" + width;
        int parents = Math.max(2, o.growthChildren / width);
        Topic<Job> parentTopic = Topic.of("g-parent-" + tag, Job.class);
        Topic<Job> childTopic = Topic.of("g-child-" + tag, Job.class);
        Saga<Job> parent = Saga.on(parentTopic, "g-parent-" + tag)
                .step("fan", s -> {
                    for (int c = 0; c < width; c++) {
                        s.launch(childTopic, new Job(c));
                    }
                })
                .step("join", s -> {
                })
                .build();
        Saga<Job> child = Saga.on(childTopic, "g-child-" + tag).step("child", s -> {
        }).build();
        long runs = (long) parents * (1 + width);
        return new Shape(tag, List.of(parent, child), (c, i) -> c.launch(parentTopic, new Job(i)), parents,
                Math.min(o.growthInFlight, parents), (double) parents * (2 + width), db -> {
                    Verify.runsCommitted(db, parent.name(), parents);
                    Verify.runsCommitted(db, child.name(), (long) parents * width);
                    Verify.events(db, 0, Verify.eventCounts(runs, runs, (long) parents * (2 + width), runs));
                });
    }

    static Shape chain(Options o, int depth) {
        String tag = "d" + depth;
        int chains = Math.max(2, o.growthLevels / depth);
        Topic<Level> topic = Topic.of("g-level-" + tag, Level.class);
        Saga<Level> level = Saga.on(topic, "g-level-" + tag)
                .step("descend", s -> {
                    if (s.payload().level() < depth) {
                        s.launch(topic, new Level(s.payload().level() + 1));
                    }
                })
                .build();
        long levels = (long) chains * depth;
        return new Shape(tag, List.of(level), (c, i) -> c.launch(topic, new Level(1)), chains,
                Math.min(o.growthInFlight, chains), levels, db -> {
                    Verify.runsCommitted(db, level.name(), levels);
                    Verify.events(db, 0, Verify.eventCounts(levels, levels, levels, levels));
                });
    }

    static Shape w1(Options o, int sagas, int threads, String tag) {
        Topic<Job> topic = Topic.of("g-w1-" + tag, Job.class);
        Saga<Job> saga = Saga.on(topic, "g-w1-" + tag)
                .step("a", s -> {
                })
                .step("b", s -> {
                })
                .step("c", s -> {
                })
                .build();
        return new Shape(tag, List.of(saga), (c, i) -> c.launch(topic, new Job(i)), sagas, threads, 3.0 * sagas,
                db -> {
                    Verify.runsCommitted(db, saga.name(), sagas);
                    Verify.events(db, 0, Verify.eventCounts(sagas, sagas, 3L * sagas, sagas));
                });
    }

    /**
     * Runs {@code shape} on a fresh database with {@code engines} engines, each on a pool of its own; with
     * {@code counted}, every pool goes through one {@link SqlStats} (which costs some JVM CPU per round trip).
     */
    static Map<String, Object> measure(Options o, Shape shape, int engines, boolean counted) {
        try (RunEnv env = RunEnv.fresh(o, "growth_" + shape.tag().toLowerCase(Locale.ROOT), false)) {
            BenchDb db = env.db;
            List<HikariDataSource> pools = new ArrayList<>(List.of(env.pool));
            for (int k = 1; k < engines; k++) {
                pools.add(db.pool(o.poolSize(), env.pool.getPoolName() + "-e" + (k + 1)));
            }
            SqlStats stats = new SqlStats();
            Map<String, Object> before = RunEnv.dbCounters(db);
            List<CoopEngine> list = new ArrayList<>();
            ClosedLoop.Result r;
            Cpu.Snapshot c0;
            Cpu.Snapshot c1;
            try {
                for (int k = 0; k < engines; k++) {
                    DataSource ds = counted ? stats.wrap(pools.get(k)) : pools.get(k);
                    CoopEngine.Builder b = Coop.engine(ds).name("growth-" + (k + 1)).workers(o.workers);
                    shape.sagas().forEach(b::register);
                    list.add(b.start());
                }
                c0 = Cpu.take();
                r = ClosedLoop.run(shape.total(), shape.inFlight(), t -> list.get(t % engines).client(),
                        shape.launch(), Duration.ofSeconds(o.timeoutSeconds));
                c1 = Cpu.take();
            } finally {
                list.forEach(CoopEngine::close);
            }
            for (HikariDataSource p : pools) {
                p.close();
                RunEnv.awaitBackendsGone(db, p.getPoolName());
            }
            Map<String, Object> d = RunEnv.delta(db, before, RunEnv.dbCounters(db));
            Verify.noFailures("growth " + shape.tag(), r.failures());
            shape.verify().accept(db);
            double steps = shape.steps();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("engines", engines);
            m.put("hierarchies", shape.total());
            m.put("inFlight", shape.inFlight());
            m.put("steps", (long) steps);
            m.put("stepsPerSec", Stats.round(r.perSecond(steps), 1));
            Throughput.latencies(m, "latency", r.latencies());
            Cpu.perUnit(m, c0, c1, steps, "Step");
            m.put("walBytesPerStep", Stats.round(Idle.num(d.get("walBytes")) / steps, 1));
            m.put("xactCommitPerStep", Stats.round(Idle.num(d.get("xact_commit")) / steps, 3));
            m.put("rowsInsertedPerStep", Stats.round(Idle.num(d.get("tup_inserted")) / steps, 3));
            Map<String, Object> cpu = Cpu.between(c0, c1);
            m.put("machineBusyCores", cpu.get("machineBusyCores"));
            m.put("postgresCores", cpu.get("postgresCores"));
            m.put("jvmCores", cpu.get("jvmCores"));
            if (counted) {
                m.put("engineRoundTripsPerStep", Stats.round(stats.total("engine", true) / steps, 3));
                m.put("engineStatementsPerStep", Stats.round(stats.total("engine", false) / steps, 3));
                m.put("clientRoundTripsPerStep", Stats.round(stats.total("client", true) / steps, 3));
                long empty = 0;
                for (Map<String, Object> row : stats.table(1)) {
                    if ("engine".equals(row.get("role")) && String.valueOf(row.get("kind")).contains("claim")) {
                        empty += ((Number) row.get("emptyResults")).longValue();
                    }
                }
                m.put("emptyClaimsPerStep", Stats.round(empty / steps, 3));
                m.put("jdbc", stats.table(steps));
            }
            m.put("elapsedSec", Stats.round(r.elapsedNanos() / 1e9, 3));
            m.put("cpu", cpu);
            m.put("loadAverage", Bench.loadAverage());
            Bench.progress("growth " + shape.tag() + " x" + engines + (counted ? " counted" : "") + ": "
                    + Runs.summary(m));
            return m;
        }
    }

    private static void costRows(Report report, String name, Map<String, Object> m) {
        report.row(name, "steps/s (counted run)", num(m, "stepsPerSec"), null, null);
        report.row(name, "engine round trips/step", num(m, "engineRoundTripsPerStep"), null, null);
        report.row(name, "engine statements/step", num(m, "engineStatementsPerStep"), null, null);
        report.row(name, "server transactions/step", num(m, "xactCommitPerStep"), null, null);
        report.row(name, "WAL bytes/step", num(m, "walBytesPerStep"), null, null);
        report.row(name, "CPU us/step, PostgreSQL", num(m, "pgCpuUsPerStep"), null, null);
        report.row(name, "CPU us/step, JVM (whole process)", num(m, "jvmCpuUsPerStep"), null, null);
        report.row(name, "CPU us/step, engine threads", num(m, "engineCpuUsPerStep"), null, null);
    }

    private static double num(Map<String, Object> m, String k) {
        return m.get(k) instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    private static double min(Runs runs, String key) {
        return runs.measured.stream().mapToDouble(m -> num(m, key)).min().orElse(Double.NaN);
    }

    private static double max(Runs runs, String key) {
        return runs.measured.stream().mapToDouble(m -> num(m, key)).max().orElse(Double.NaN);
    }
}
