package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.bench.Payloads.Job;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Wake-ups of workload {@code citus}: from a launch's return (its transaction committed) to the first step's body
 * starting, one launch at a time through a client of its own (no in-process wake of the engine), each after a random
 * pause of up to one poll interval so that launches fall at every phase of the engine's polling. Both instants are
 * this JVM's {@code System.nanoTime()}. Compared: plain PostgreSQL with notifications (the launch's NOTIFY wakes the
 * engine), plain PostgreSQL poll-only at the first of {@code --citus-poll-ms}, and the Citus cluster poll-only at
 * each of {@code --citus-poll-ms}. Each run then leaves the engine idle for 2 s and records the servers' CPU: what
 * polling at that interval costs when there is nothing to do.
 */
final class CitusWakeUp {
    private static final int WARM_SAMPLES = 5;
    private static final long IDLE_NANOS = 2_000_000_000L;

    private CitusWakeUp() {
    }

    /** One variant of the wake-up: plain or Citus, notifications or the poll interval. */
    record Mode(String name, boolean citus, boolean notifications, Duration poll) {
    }

    static List<Mode> modes(Options o) {
        List<Mode> modes = new ArrayList<>();
        modes.add(new Mode("plain, notifications", false, true, Coop.DEFAULT_POLL_INTERVAL));
        modes.add(new Mode("plain, poll " + o.citusPollMs[0] + " ms", false, false,
                Duration.ofMillis(o.citusPollMs[0])));
        for (int ms : o.citusPollMs) {
            modes.add(new Mode("citus, poll " + ms + " ms", true, false, Duration.ofMillis(ms)));
        }
        return modes;
    }

    static Map<String, Runs> run(Options o, CitusCluster cluster) {
        Map<String, Runs> out = new LinkedHashMap<>();
        for (int round = 0; round < o.citusWakeRounds; round++) {
            for (Mode mode : modes(o)) {
                Map<String, Object> m = once(o, cluster, mode, "r" + round);
                out.computeIfAbsent(mode.name(), Runs::new).add(m, false,
                        "wake-up round " + (round + 1) + "/" + o.citusWakeRounds);
            }
        }
        return out;
    }

    static Map<String, Object> once(Options o, CitusCluster cluster, Mode mode, String tag) {
        String name = cluster.createDatabase("bench_wake", mode.citus());
        BenchDb db = BenchDb.existing(cluster.coordinator(), name);
        try {
            RunEnv.migrate(db);
            return measure(o, cluster, db, mode, tag);
        } finally {
            db.close();
            cluster.dropDatabase(name, mode.citus());
        }
    }

    private static Map<String, Object> measure(Options o, CitusCluster cluster, BenchDb db, Mode mode, String tag) {
        int samples = o.citusWakeSamples + WARM_SAMPLES;
        long[] started = new long[samples];
        List<CompletableFuture<Void>> first = new ArrayList<>();
        for (int i = 0; i < samples; i++) {
            first.add(new CompletableFuture<>());
        }
        Topic<Job> topic = Topic.of("wake-" + tag, Job.class);
        Saga<Job> saga = Saga.on(topic, "wake-" + tag).step("first", s -> {
            int n = s.payload().n();
            started[n] = System.nanoTime();
            first.get(n).complete(null);
        }).build();
        HikariDataSource enginePool = db.pool(o.poolSize(), "coop-wake");
        HikariDataSource clientPool = db.pool(2, "bench-wake-client");
        long[] wake = new long[o.citusWakeSamples];
        long[] launch = new long[o.citusWakeSamples];
        List<MessageId> ids = new ArrayList<>();
        Map<String, Object> m = new LinkedHashMap<>();
        try (CoopEngine engine = Coop.engine(enginePool).workers(o.workers).notifications(mode.notifications())
                .pollInterval(mode.poll()).register(saga).start()) {
            CoopClient client = Coop.client(clientPool);
            long maxPause = Math.max(20, mode.notifications() ? 20 : mode.poll().toMillis());
            for (int i = 0; i < samples; i++) {
                pause(ThreadLocalRandom.current().nextLong(maxPause + 1));
                long t0 = System.nanoTime();
                ids.add(client.launch(topic, new Job(i)));
                long t1 = System.nanoTime();
                try {
                    first.get(i).get(o.timeoutSeconds, TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new IllegalStateException("wake-up " + mode.name() + ": sample " + i + " never started", e);
                }
                if (i >= WARM_SAMPLES) {
                    wake[i - WARM_SAMPLES] = started[i] - t1;
                    launch[i - WARM_SAMPLES] = t1 - t0;
                }
            }
            idle(cluster, m);
            for (MessageId id : ids) {
                engine.client().awaitCompletion(id, Duration.ofSeconds(o.timeoutSeconds));
            }
        } finally {
            clientPool.close();
        }
        long[] s = Stats.sorted(wake);
        m.put("wakeP50Ms", Stats.ms(Stats.percentile(s, 50)));
        m.put("wakeP99Ms", Stats.ms(Stats.percentile(s, 99)));
        m.put("wakeMaxMs", Stats.ms(s[s.length - 1]));
        m.put("wakeMeanMs", Stats.round(java.util.Arrays.stream(s).average().orElse(0) / 1e6, 3));
        long[] l = Stats.sorted(launch);
        m.put("launchP50Ms", Stats.ms(Stats.percentile(l, 50)));
        m.put("launchP99Ms", Stats.ms(Stats.percentile(l, 99)));
        m.put("samples", o.citusWakeSamples);
        m.put("pollMs", mode.notifications() ? -1 : mode.poll().toMillis());
        return m;
    }

    /** The servers' CPU while the engine idles for 2 s: what its polling costs when there is nothing to do. */
    private static void idle(CitusCluster cluster, Map<String, Object> m) {
        long[] n0 = cluster.cpuNanos();
        long idleStart = System.nanoTime();
        pause(IDLE_NANOS / 1_000_000);
        long[] n1 = cluster.cpuNanos();
        double idleSeconds = (System.nanoTime() - idleStart) / 1e9;
        Map<String, Object> idle = new LinkedHashMap<>();
        double total = 0;
        for (int i = 0; i < n0.length; i++) {
            double cores = (n1[i] - n0[i]) / 1e9 / idleSeconds;
            total += cores;
            idle.put(cluster.nodes.get(i).role(), Stats.round(cores, 4));
        }
        m.put("idleServersCores", Stats.round(total, 4));
        m.put("idleCores", idle);
    }

    /** A pause of the benchmark's own (between samples, and the idle window), not a wait for something. */
    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    static String table(Options o, Map<String, Runs> runs) {
        List<String> rows = new ArrayList<>();
        rows.add("| Wake-up: launch committed -> first step starts (" + o.citusWakeSamples + " samples x "
                + o.citusWakeRounds + " run(s), one at a time) | p50 ms | p99 ms | max ms | launch p50 ms"
                + " | idle servers' CPU, cores |");
        rows.add("|---|---:|---:|---:|---:|---:|");
        runs.forEach((name, r) -> rows.add("| " + name + " | " + Report.fmt(r.median("wakeP50Ms")) + " | "
                + Report.fmt(r.median("wakeP99Ms")) + " | " + Report.fmt(r.median("wakeMaxMs")) + " | "
                + Report.fmt(r.median("launchP50Ms")) + " | " + Report.fmt(r.median("idleServersCores")) + " |"));
        return String.join("\n", rows);
    }
}
