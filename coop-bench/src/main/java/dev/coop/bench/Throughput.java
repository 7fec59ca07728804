package dev.coop.bench;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.bench.Payloads.Job;
import dev.coop.bench.Payloads.Level;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;

/** W1 (steps), W2 (fan-out) and W3 (depth): closed loops of launches, each awaited. */
final class Throughput {
    private Throughput() {
    }

    /** What one closed-loop run produced, before verification. */
    record Outcome(ClosedLoop.Result loop, Map<String, Object> cpu, Map<String, Object> metrics) {
    }

    static Map<String, Object> latencies(Map<String, Object> m, String prefix, long[] latencies) {
        long[] s = Stats.sorted(latencies);
        m.put(prefix + "P50Ms", Stats.ms(Stats.percentile(s, 50)));
        m.put(prefix + "P95Ms", Stats.ms(Stats.percentile(s, 95)));
        m.put(prefix + "P99Ms", Stats.ms(Stats.percentile(s, 99)));
        m.put(prefix + "MaxMs", Stats.ms(s.length == 0 ? 0 : s[s.length - 1]));
        return m;
    }

    /**
     * W1: {@code sagas} independent sagas of 3 no-op steps, {@code threads} client threads. The saga and topic
     * names carry {@code tag} so that runs sharing a database (history) are verified separately.
     */
    static Map<String, Object> w1(Options o, BenchDb db, DataSource ds, double phys, int sagas, int threads,
            String tag) {
        return w1(o, db, ds, phys, sagas, threads, tag, 0);
    }

    /** The saga of W1: three empty steps (with limits that do not bind in the 'limits' workload's variant). */
    static Saga<Job> w1Saga(Topic<Job> topic, String tag) {
        Saga.Builder<Job> sagaBuilder = Saga.on(topic, "w1-saga-" + tag);
        if (Boolean.getBoolean(LimitsAb.LIMITED)) { // the 'limits' workload: limits that do not bind
            sagaBuilder.concurrency(LimitsAb.CONCURRENCY).rateLimit(LimitsAb.RATE, java.time.Duration.ofSeconds(1));
        }
        return sagaBuilder
                .step("a", s -> {
                })
                .step("b", s -> {
                })
                .step("c", s -> {
                })
                .build();
    }

    /** W1 on a database that already holds {@code prior} runs of the same saga (history workload). */
    static Map<String, Object> w1(Options o, BenchDb db, DataSource ds, double phys, int sagas, int threads,
            String tag, long prior) {
        return w1(o, db, ds, phys, sagas, threads, tag, prior, java.util.List.of());
    }

    /** W1 with {@code listeners} registered on the engine (the metrics and tracing workload). */
    static Map<String, Object> w1(Options o, BenchDb db, DataSource ds, double phys, int sagas, int threads,
            String tag, long prior, java.util.List<dev.coop.EngineListener> listeners) {
        return w1(o, db, ds, phys, sagas, threads, tag, prior, listeners, topic -> w1Saga(topic, tag));
    }

    /** W1 with a saga of three steps of the caller's (the 'spring' workload: steps that use JDBC). */
    static Map<String, Object> w1(Options o, BenchDb db, DataSource ds, double phys, int sagas, int threads,
            String tag, long prior, java.util.List<dev.coop.EngineListener> listeners,
            java.util.function.Function<Topic<Job>, Saga<Job>> sagaOf) {
        return w1(o, db, ds, phys, sagas, threads, tag, prior, listeners, sagaOf, null);
    }

    /** W1 whose measured window {@code server} observes on the server (the side-by-side runs), when not null. */
    static Map<String, Object> w1(Options o, BenchDb db, DataSource ds, double phys, int sagas, int threads,
            String tag, ServerProfile server) {
        return w1(o, db, ds, phys, sagas, threads, tag, 0, java.util.List.of(), topic -> w1Saga(topic, tag), server);
    }

    private static Map<String, Object> w1(Options o, BenchDb db, DataSource ds, double phys, int sagas, int threads,
            String tag, long prior, java.util.List<dev.coop.EngineListener> listeners,
            java.util.function.Function<Topic<Job>, Saga<Job>> sagaOf, ServerProfile server) {
        Topic<Job> topic = Topic.of("w1-" + tag, Job.class);
        Saga<Job> saga = sagaOf.apply(topic);
        long watermark = Verify.maxEventId(db);
        Map<String, Object> m = new LinkedHashMap<>();
        ClosedLoop.Result r;
        Cpu.Snapshot c0;
        Cpu.Snapshot c1;
        CoopEngine.Builder builder = Coop.engine(ds).workers(o.workers).register(saga);
        listeners.forEach(builder::listener);
        try (CoopEngine engine = builder.start()) {
            CoopClient client = engine.client();
            if (server != null) {
                server.begin();
            }
            c0 = Cpu.take();
            boolean options = LaunchOptionsAb.on();
            r = ClosedLoop.run(sagas, threads, i -> options
                    ? client.launch(topic, new Job(i), LaunchOptionsAb.options(i))
                    : client.launch(topic, new Job(i)), client, Duration.ofSeconds(o.timeoutSeconds));
            c1 = Cpu.take();
            if (server != null) {
                server.end();
            }
        }
        Verify.noFailures("W1", r.failures());
        Verify.runsCommitted(db, saga.name(), prior + sagas);
        Verify.messages(db, topic.name(), prior + sagas);
        Verify.events(db, watermark, Verify.eventCounts(sagas, sagas, 3L * sagas, sagas));
        double steps = 3.0 * sagas;
        m.put("sagasPerSec", Stats.round(r.perSecond(sagas), 1));
        m.put("stepsPerSec", Stats.round(r.perSecond(steps), 1));
        m.put("physTxPerSec", Stats.round(phys, 1));
        m.put("ratioToPhys", Stats.round(r.perSecond(steps) / phys, 3));
        latencies(m, "latency", r.latencies());
        m.put("elapsedSec", Stats.round(r.elapsedNanos() / 1e9, 3));
        Map<String, Object> cpu = Cpu.between(c0, c1);
        Cpu.perUnit(m, c0, c1, steps, "Step");
        m.put("clientCpuUsPerSaga", Stats.round(r.clientCpuNanos() / 1e3 / sagas, 1));
        m.put("cpu", cpu);
        return m;
    }

    /**
     * W2: each parent's first step emits {@code children} messages handled by a 2-step child saga; its second step
     * runs after they all finished.
     */
    static Map<String, Object> w2(Options o, BenchDb db, DataSource ds, double phys, int parents, int inFlight,
            String tag) {
        int children = o.w2Children;
        Topic<Job> parentTopic = Topic.of("w2-parent-" + tag, Job.class);
        Topic<Job> childTopic = Topic.of("w2-child-" + tag, Job.class);
        Saga<Job> parent = Saga.on(parentTopic, "w2-parent-" + tag)
                .step("fan", s -> {
                    for (int c = 0; c < children; c++) {
                        s.launch(childTopic, new Job(c));
                    }
                })
                .step("join", s -> {
                })
                .build();
        Saga<Job> child = Saga.on(childTopic, "w2-child-" + tag)
                .step("c1", s -> {
                })
                .step("c2", s -> {
                })
                .build();
        long watermark = Verify.maxEventId(db);
        ClosedLoop.Result r;
        Cpu.Snapshot c0;
        Cpu.Snapshot c1;
        try (CoopEngine engine = Coop.engine(ds).workers(o.workers).register(parent, child).start()) {
            CoopClient client = engine.client();
            c0 = Cpu.take();
            r = ClosedLoop.run(parents, inFlight, i -> client.launch(parentTopic, new Job(i)), client,
                    Duration.ofSeconds(o.timeoutSeconds));
            c1 = Cpu.take();
        }
        long runs = (long) parents * (1 + children);
        Verify.noFailures("W2", r.failures());
        Verify.runsCommitted(db, parent.name(), parents);
        Verify.runsCommitted(db, child.name(), (long) parents * children);
        Verify.messages(db, parentTopic.name(), parents);
        Verify.messages(db, childTopic.name(), (long) parents * children);
        Verify.events(db, watermark, Verify.eventCounts(runs, runs, (long) parents * (2 + 2L * children), runs));
        double steps = (double) parents * (2 + 2 * children);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("parentsPerSec", Stats.round(r.perSecond(parents), 1));
        m.put("stepsPerSec", Stats.round(r.perSecond(steps), 1));
        m.put("physTxPerSec", Stats.round(phys, 1));
        m.put("ratioToPhys", Stats.round(r.perSecond(steps) / phys, 3));
        latencies(m, "parent", r.latencies());
        m.put("steps", (long) steps);
        m.put("elapsedSec", Stats.round(r.elapsedNanos() / 1e9, 3));
        Cpu.perUnit(m, c0, c1, steps, "Step");
        m.put("cpu", Cpu.between(c0, c1));
        return m;
    }

    /**
     * W3: chains of {@code depth} levels; each level's only step emits one message to the next level, and the
     * level completes after the next one did.
     */
    static Map<String, Object> w3(Options o, BenchDb db, DataSource ds, double phys, int chains, int inFlight,
            String tag) {
        int depth = o.w3Depth;
        Topic<Level> topic = Topic.of("w3-" + tag, Level.class);
        Saga<Level> level = Saga.on(topic, "w3-level-" + tag)
                .step("descend", s -> {
                    if (s.payload().level() < depth) {
                        s.launch(topic, new Level(s.payload().level() + 1));
                    }
                })
                .build();
        long watermark = Verify.maxEventId(db);
        ClosedLoop.Result r;
        Cpu.Snapshot c0;
        Cpu.Snapshot c1;
        try (CoopEngine engine = Coop.engine(ds).workers(o.workers).register(level).start()) {
            CoopClient client = engine.client();
            c0 = Cpu.take();
            r = ClosedLoop.run(chains, inFlight, i -> client.launch(topic, new Level(1)), client,
                    Duration.ofSeconds(o.timeoutSeconds));
            c1 = Cpu.take();
        }
        long levels = (long) chains * depth;
        Verify.noFailures("W3", r.failures());
        Verify.runsCommitted(db, level.name(), levels);
        Verify.messages(db, topic.name(), levels);
        Verify.events(db, watermark, Verify.eventCounts(levels, levels, levels, levels));
        // transactions: one step per level plus one completion per level that waited for a child
        double transactions = levels + (double) chains * (depth - 1);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("chainsPerSec", Stats.round(r.perSecond(chains), 2));
        m.put("levelsPerSec", Stats.round(r.perSecond(levels), 1));
        m.put("engineTxPerSec", Stats.round(r.perSecond(transactions), 1));
        m.put("physTxPerSec", Stats.round(phys, 1));
        m.put("ratioToPhys", Stats.round(r.perSecond(levels) / phys, 3));
        m.put("txRatioToPhys", Stats.round(r.perSecond(transactions) / phys, 3));
        latencies(m, "chain", r.latencies());
        m.put("elapsedSec", Stats.round(r.elapsedNanos() / 1e9, 3));
        Cpu.perUnit(m, c0, c1, transactions, "Tx");
        m.put("cpu", Cpu.between(c0, c1));
        return m;
    }
}
