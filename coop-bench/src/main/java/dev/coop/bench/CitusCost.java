package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.bench.Payloads.Job;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;

/**
 * Workload {@code citus}: what distribution costs per step. W1 and W2 run on the test kit's three-node Citus cluster
 * ({@link CitusCluster}) and on plain PostgreSQL on the same machine: a database without the extension on the
 * cluster's coordinator, so that both sides run the same server binaries with the same settings ({@code fsync}
 * off). Variants, alternating in each round (the order reversed every other round):
 * <ul>
 * <li>{@code plain}: plain PostgreSQL, notifications on (as users run it);
 * <li>{@code plain-poll}: plain PostgreSQL poll-only at the Citus interval, which separates the cost of polling from
 * the cost of distribution;
 * <li>{@code citus}: the distributed schema, engines poll-only ({@code notifications(false)}: a worker's
 * {@code pg_notify} does not reach the coordinator's listeners) at the first of {@code --citus-poll-ms}.
 * </ul>
 * Each run counts the engine's round trips (client side, {@link SqlStats}), the two-phase commits Citus logged, the
 * JVM's CPU and each node's server CPU per step. Then {@link CitusWakeUp} measures launch to first step start.
 */
final class CitusCost {
    /** One side of the comparison; {@code onePool}: one connection per worker and session (see below). */
    record Variant(String name, boolean citus, boolean notifications, boolean onePool) {
    }

    /**
     * {@code citus-1conn} is the cluster with {@code citus.max_adaptive_executor_pool_size = 1} for the database: a
     * multi-shard statement (the claim's candidates) uses one connection per worker instead of opening more, which
     * Citus closes at the end of the transaction (it caches {@code citus.max_cached_conns_per_worker} = 1).
     */
    static final List<Variant> VARIANTS = List.of(new Variant("plain", false, true, false),
            new Variant("plain-poll", false, false, false), new Variant("citus", true, false, false),
            new Variant("citus-1conn", true, false, true));
    private static final List<String> METRICS = List.of("stepsPerSec", "latencyP50Ms", "latencyP99Ms",
            "engineRoundTripsPerStep", "engineStatementsPerStep", "twoPhasePreparesPerStep",
            "twoPhaseTransactionsPerStep", "jvmCpuUsPerStep", "coordinatorCpuUsPerStep", "worker1CpuUsPerStep",
            "worker2CpuUsPerStep", "serversCpuUsPerStep", "allCpuUsPerStep", "workerSessionsPerStep",
            "otherTenantsCores");

    private CitusCost() {
    }

    static void run(Options o, Report report) {
        CitusCluster cluster = CitusCluster.start();
        Duration poll = Duration.ofMillis(o.citusPollMs[0]);
        Map<String, Runs> runs = new LinkedHashMap<>();
        int rounds = o.warmups + o.citusRounds;
        for (int round = 0; round < rounds; round++) {
            boolean warm = round < o.warmups;
            String label = warm ? "warm-up " + (round + 1) : "round " + (round - o.warmups + 1) + "/" + o.citusRounds;
            List<Variant> order = round % 2 == 0 ? variants(o) : variants(o).reversed();
            for (String workload : List.of("w1", "w2")) {
                for (Variant v : order) {
                    Map<String, Object> m = once(o, cluster, v, workload, poll, "r" + round);
                    runs.computeIfAbsent(v.name() + " " + workload, Runs::new).add(m, warm, label);
                }
            }
        }
        Map<String, Object> all = new LinkedHashMap<>();
        runs.forEach((k, r) -> all.put(k, r.toMap()));
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("cluster", cluster.cluster.toString());
        meta.put("nodes", cluster.nodes.toString());
        meta.put("pollMs", poll.toMillis());
        meta.put("w1", o.w1Sagas + " sagas x 3 steps, " + o.citusThreads + " client threads");
        meta.put("w2", o.w2Parents + " parents x " + o.w2Children + " children, " + o.w2InFlight + " in flight");
        all.put("setup", meta);
        String table = table(o, runs, poll);
        Map<String, Runs> wake = CitusWakeUp.run(o, cluster);
        Map<String, Object> wakeJson = new LinkedHashMap<>();
        wake.forEach((k, r) -> wakeJson.put(k, r.toMap()));
        all.put("wakeup", wakeJson);
        report.workloads.put("citus", all);
        String wakeTable = CitusWakeUp.table(o, wake);
        report.json.put("citusTable", table);
        report.json.put("citusWakeTable", wakeTable);
        report.extra(table);
        report.extra(wakeTable);
        for (String w : List.of("w1", "w2")) {
            for (Variant v : variants(o)) {
                Runs r = runs.get(v.name() + " " + w);
                String name = "citus " + w.toUpperCase(Locale.ROOT) + ", " + v.name();
                report.row(name, "steps/s", r, "stepsPerSec", null, null, null);
                report.row(name, "engine round trips/step", r, "engineRoundTripsPerStep", null, null, null);
                report.row(name, "2PC prepares/step", r, "twoPhasePreparesPerStep", null, null, null);
                report.row(name, "server CPU us/step (all nodes)", r, "serversCpuUsPerStep", null, null, null);
            }
        }
    }

    /** One run of a workload on a fresh database of the variant. */
    static Map<String, Object> once(Options o, CitusCluster cluster, Variant v, String workload, Duration poll,
            String tag) {
        String name = cluster.createDatabase("bench_" + v.name().replace('-', '_') + "_" + workload, v.citus());
        BenchDb db = BenchDb.existing(cluster.coordinator(), name);
        try {
            if (v.onePool()) {
                db.exec("ALTER DATABASE " + name + " SET citus.max_adaptive_executor_pool_size = 1"); // generated name
            }
            RunEnv.migrate(db);
            HikariDataSource pool = db.pool(o.poolSize(), "coop-" + v.name());
            SqlStats stats = new SqlStats();
            return measure(o, cluster, db, v, workload, stats.wrap(pool), stats, poll, tag);
        } finally {
            db.close();
            cluster.dropDatabase(name, v.citus());
        }
    }

    /** The counters read around a run's measured window: each node's CPU, the two-phase commits, the sessions. */
    private record Counters(long[] cpuNanos, long[] twoPhase, long workerSessions) {
        static Counters read(CitusCluster cluster, BenchDb db, boolean citus) {
            return new Counters(cluster.cpuNanos(), citus ? cluster.twoPhaseCommits(db.name) : new long[]{0, 0},
                    citus ? cluster.workerSessions(db.name) : 0);
        }
    }

    /** W1's saga, or W2's parent and child. */
    private static List<Saga<Job>> sagas(Options o, boolean w1, Topic<Job> topic, String tag) {
        if (w1) {
            return List.of(Throughput.w1Saga(topic, tag));
        }
        int children = o.w2Children;
        Topic<Job> childTopic = Topic.of("w2-child-" + tag, Job.class);
        return List.of(Saga.on(topic, "w2-parent-" + tag).step("fan", s -> {
            for (int c = 0; c < children; c++) {
                s.launch(childTopic, new Job(c));
            }
        }).step("join", s -> {
        }).build(), Saga.on(childTopic, "w2-child-" + tag).step("c1", s -> {
        }).step("c2", s -> {
        }).build());
    }

    private static Map<String, Object> measure(Options o, CitusCluster cluster, BenchDb db, Variant v,
            String workload, DataSource ds, SqlStats stats, Duration poll, String tag) {
        boolean w1 = workload.equals("w1");
        Topic<Job> topic = Topic.of(workload + "-" + tag, Job.class);
        int launches = w1 ? o.w1Sagas : o.w2Parents;
        int threads = w1 ? o.citusThreads : o.w2InFlight;
        double steps = w1 ? 3.0 * launches : (double) launches * (2 + 2 * o.w2Children);
        long runs = w1 ? launches : (long) launches * (1 + o.w2Children);
        CoopEngine.Builder builder = Coop.engine(ds).workers(o.workers).notifications(v.notifications());
        if (!v.notifications()) {
            builder.pollInterval(poll);
        }
        sagas(o, w1, topic, tag).forEach(builder::register);
        ClosedLoop.Result r;
        Cpu.Snapshot c0;
        Cpu.Snapshot c1;
        Counters before;
        Counters after;
        try (CoopEngine engine = builder.start()) {
            CoopClient client = engine.client();
            stats.reset();
            before = Counters.read(cluster, db, v.citus());
            c0 = Cpu.take();
            r = ClosedLoop.run(launches, threads, i -> client.launch(topic, new Job(i)), client,
                    Duration.ofSeconds(o.timeoutSeconds));
            c1 = Cpu.take();
            after = Counters.read(cluster, db, v.citus());
        }
        Verify.noFailures("citus " + v.name() + " " + workload, r.failures());
        long committed = db.longValue("SELECT count(*) FROM coop.run WHERE status = 'COMMITTED'");
        if (committed != runs) {
            throw new IllegalStateException("citus " + v.name() + " " + workload + ": expected " + runs
                    + " committed runs, found " + db.counts("SELECT status, count(*) FROM coop.run GROUP BY status"));
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("stepsPerSec", Stats.round(r.perSecond(steps), 1));
        m.put((w1 ? "sagas" : "parents") + "PerSec", Stats.round(r.perSecond(launches), 1));
        Throughput.latencies(m, "latency", r.latencies());
        m.put("engineRoundTripsPerStep", Stats.round(stats.total("engine", true) / steps, 3));
        m.put("engineStatementsPerStep", Stats.round(stats.total("engine", false) / steps, 3));
        m.put("engineCommitsPerStep", Stats.round(stats.calls("engine", "COMMIT") / steps, 3));
        m.put("clientRoundTripsPerStep", Stats.round(stats.total("client", true) / steps, 3));
        m.put("twoPhasePreparesPerStep", Stats.round((after.twoPhase()[0] - before.twoPhase()[0]) / steps, 3));
        m.put("twoPhaseTransactionsPerStep", Stats.round((after.twoPhase()[1] - before.twoPhase()[1]) / steps, 3));
        m.put("workerSessionsPerStep", Stats.round((after.workerSessions() - before.workerSessions()) / steps, 3));
        m.put("steps", (long) steps);
        cpu(m, cluster, c0, c1, before.cpuNanos(), after.cpuNanos(), steps);
        m.put("events", new TreeMap<>(db.counts("SELECT type, count(*) FROM coop.event GROUP BY type")));
        m.put("statements", stats.table(steps));
        return m;
    }

    /** CPU per step: the JVM's, each node's, all of it, and what other processes took meanwhile. */
    private static void cpu(Map<String, Object> m, CitusCluster cluster, Cpu.Snapshot c0, Cpu.Snapshot c1, long[] n0,
            long[] n1, double steps) {
        double seconds = (c1.wallNanos() - c0.wallNanos()) / 1e9;
        m.put("elapsedSec", Stats.round(seconds, 3));
        Cpu.perUnit(m, c0, c1, steps, "Step");
        // Cpu's PostgreSQL figures are those of the benchmark's other server, if a workload located one: not these
        m.remove("pgCpuUsPerStep");
        m.remove("cpuUsPerStep");
        cluster.perUnit(m, n0, n1, steps, "Step", seconds);
        m.put("allCpuUsPerStep", Stats.round(((Number) m.get("serversCpuUsPerStep")).doubleValue()
                + ((Number) m.get("jvmCpuUsPerStep")).doubleValue(), 1));
        Map<String, Object> cpu = Cpu.between(c0, c1);
        double servers = 0;
        for (int i = 0; i < n0.length; i++) {
            servers += (n1[i] - n0[i]) / 1e9 / seconds;
        }
        m.put("otherTenantsCores", Stats.round(Math.max(0, ((Number) cpu.get("machineBusyCores")).doubleValue()
                - ((Number) cpu.get("jvmCores")).doubleValue() - servers), 3));
        m.put("cpu", cpu);
    }

    /** Medians per variant, and each Citus variant over plain PostgreSQL. */
    private static String table(Options o, Map<String, Runs> runs, Duration poll) {
        List<String> rows = new ArrayList<>();
        StringBuilder head = new StringBuilder("| Citus vs plain PostgreSQL, same machine (" + o.citusRounds
                + " alternating rounds, medians; all but plain poll every " + poll.toMillis() + " ms) |");
        StringBuilder line = new StringBuilder("|---|");
        List<Variant> variants = variants(o);
        List<Variant> distributed = variants.stream().filter(Variant::citus).toList();
        for (Variant v : variants) {
            head.append(' ').append(v.name()).append(" |");
            line.append("---:|");
        }
        for (Variant v : distributed) {
            head.append(' ').append(v.name()).append(" / plain |");
            line.append("---:|");
        }
        rows.add(head.toString());
        rows.add(line.toString());
        for (String w : List.of("w1", "w2")) {
            for (String metric : METRICS) {
                List<Double> values = new ArrayList<>();
                for (Variant v : variants) {
                    values.add(median(runs, v.name() + " " + w, metric));
                }
                StringBuilder row = new StringBuilder("| " + w.toUpperCase(Locale.ROOT) + " " + metric + " |");
                for (double value : values) {
                    row.append(' ').append(Report.fmt(value)).append(" |");
                }
                for (Variant v : distributed) {
                    row.append(' ').append(ratio(median(runs, v.name() + " " + w, metric),
                            median(runs, "plain " + w, metric))).append(" |");
                }
                rows.add(row.toString());
            }
        }
        return String.join("\n", rows);
    }

    /** The variants of {@code --citus-variants}, in {@link #VARIANTS}' order. */
    static List<Variant> variants(Options o) {
        return VARIANTS.stream().filter(v -> o.citusVariants.contains(v.name())).toList();
    }

    private static double median(Map<String, Runs> runs, String name, String metric) {
        Runs r = runs.get(name);
        return r == null ? Double.NaN : r.median(metric);
    }

    static String ratio(double a, double b) {
        return Double.isNaN(a) || Double.isNaN(b) || b == 0 ? "-" : Report.fmt(a / b);
    }
}
