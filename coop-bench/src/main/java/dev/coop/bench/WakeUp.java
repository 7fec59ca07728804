package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.bench.Payloads.Job;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Wake-up latency: from a child's final commit to its parent's next step starting, both read from the database
 * clock: the child's COMMITTED event ({@code created_at}, written by its last transaction just before it commits)
 * and a {@code clock_timestamp()} taken by the first statement of the parent's next step.
 *
 * <p>
 * Modes: {@code notify} runs the parent saga and the child saga in two engines, so the parent learns of its child's
 * end only through LISTEN/NOTIFY; {@code poll} is the same with notifications off (pickup by polling alone, every
 * {@code --poll-ms}); {@code local} runs both sagas in one engine, which wakes the parent in-process.
 */
final class WakeUp {
    private WakeUp() {
    }

    static Map<String, Object> once(Options o, RunEnv env, String mode, int samples, int inFlight, String tag) {
        BenchDb db = env.db;
        db.exec("CREATE TABLE IF NOT EXISTS public.bench_wake (run_id uuid PRIMARY KEY, resumed_at timestamptz NOT NULL)");
        Topic<Job> parentTopic = Topic.of("wake-parent-" + tag, Job.class);
        Topic<Job> childTopic = Topic.of("wake-child-" + tag, Job.class);
        Saga<Job> parent = Saga.on(parentTopic, "wake-parent-" + tag)
                .step("spawn", s -> s.launch(childTopic, new Job(s.payload().n())))
                .step("resume", s -> {
                    try (PreparedStatement ps = s.connection().prepareStatement(
                            "INSERT INTO public.bench_wake (run_id, resumed_at) VALUES (?, clock_timestamp())")) {
                        ps.setObject(1, s.runId());
                        ps.executeUpdate();
                    }
                })
                .build();
        boolean notifications = !mode.equals("poll");
        Duration poll = mode.equals("poll") ? Duration.ofMillis(o.pollMs) : Coop.DEFAULT_POLL_INTERVAL;
        long childPause = mode.equals("poll") ? o.pollMs : 0;
        // Poll-only: both engines poll with the same period, so a child picked up by one poll would finish at a
        // fixed phase of the other engine's polling. A random pause in the child spreads its commit over the whole
        // poll interval, as in a real deployment where children take varying time.
        Saga<Job> child = Saga.on(childTopic, "wake-child-" + tag)
                .step("only", s -> {
                    if (childPause > 0) {
                        Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextLong(childPause + 1));
                    }
                })
                .build();
        ClosedLoop.Result r;
        if (mode.equals("local")) {
            try (CoopEngine engine = Coop.engine(env.pool).workers(o.workers).register(parent, child).start()) {
                CoopClient client = engine.client();
                r = ClosedLoop.run(samples, inFlight, i -> client.launch(parentTopic, new Job(i)), client,
                        Duration.ofSeconds(o.timeoutSeconds));
            }
        } else {
            HikariDataSource childPool = db.pool(o.poolSize(), "coop-child-" + tag);
            try (CoopEngine childEngine = Coop.engine(childPool).name("children").workers(o.workers)
                    .notifications(notifications).pollInterval(poll).register(child).start();
                    CoopEngine parentEngine = Coop.engine(env.pool).name("parents").workers(o.workers)
                            .notifications(notifications).pollInterval(poll).register(parent).start()) {
                if (notifications) {
                    // one at a time: nothing but the child's NOTIFY can wake the parent engine
                    CoopClient client = parentEngine.client();
                    r = ClosedLoop.run(samples, inFlight, i -> client.launch(parentTopic, new Job(i)), client,
                            Duration.ofSeconds(o.timeoutSeconds));
                } else {
                    // Poll-only: launched through a client of its own (no in-process wake of the parent engine), at
                    // random moments over three poll intervals so that children finish at every phase of the
                    // parent engine's polling. A claim for any parent would also pick up a woken one; with launches
                    // that do not wake the engine, every pickup comes from a poll.
                    HikariDataSource clientPool = db.pool(4, "bench-client-" + tag);
                    try {
                        CoopClient client = Coop.client(clientPool);
                        long spread = 3 * poll.toMillis();
                        r = ClosedLoop.run(samples, samples, i -> {
                            try {
                                Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextLong(spread + 1));
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                            return client.launch(parentTopic, new Job(i));
                        }, client, Duration.ofSeconds(o.timeoutSeconds));
                    } finally {
                        clientPool.close();
                    }
                }
            } finally {
                childPool.close();
            }
        }
        Verify.noFailures("wake-up " + mode, r.failures());
        Verify.runsCommitted(db, parent.name(), samples);
        Verify.runsCommitted(db, child.name(), samples);
        List<Map<String, Object>> rows = db.rows("""
                SELECT (extract(epoch FROM w.resumed_at - e.created_at) * 1000000)::bigint AS us
                  FROM public.bench_wake w
                  JOIN coop.run p ON p.id = w.run_id AND p.saga = ?
                  JOIN coop.run c ON c.parent_id = p.id
                  JOIN coop.event e ON e.message_id = c.message_id AND e.type = 'COMMITTED' AND e.saga = c.saga
                """, parent.name());
        if (rows.size() != samples) {
            throw new IllegalStateException("wake-up " + mode + ": expected " + samples + " resumed parents with a"
                    + " committed child, found " + rows.size());
        }
        long[] nanos = rows.stream().mapToLong(row -> ((Number) row.get("us")).longValue() * 1000).sorted()
                .toArray();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("wakeP50Ms", Stats.ms(Stats.percentile(nanos, 50)));
        m.put("wakeP99Ms", Stats.ms(Stats.percentile(nanos, 99)));
        m.put("wakeMaxMs", Stats.ms(nanos[nanos.length - 1]));
        m.put("wakeMeanMs", Stats.round(java.util.Arrays.stream(nanos).average().orElse(0) / 1e6, 3));
        m.put("wakeMinMs", Stats.ms(nanos[0]));
        m.put("samples", samples);
        m.put("inFlight", inFlight);
        m.put("pollMs", poll.toMillis());
        Throughput.latencies(m, "parent", r.latencies());
        return m;
    }
}
