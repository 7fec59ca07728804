package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.TaskOptions;
import dev.coop.TaskState;
import dev.coop.Topic;
import dev.coop.bench.Payloads.Job;
import dev.coop.inspect.Outcome;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The wake-up of a completed external task: a step opens a task (by key), a client of its own (another process, as
 * far as the engine knows: only LISTEN/NOTIFY tells the engine) completes it, and the run's next step starts. Measured
 * on the database clock from the completion's statement (the task's COMMITTED event, written by it) to the
 * {@code clock_timestamp()} of the first statement of the next step; plus the caller's own time in
 * {@code complete()} and its round trips (statements and commits counted on its connections). One task at a time.
 */
final class TaskWake {
    private TaskWake() {
    }

    static Map<String, Object> once(Options o, RunEnv env, int samples, String tag) throws Exception {
        BenchDb db = env.db;
        db.exec("CREATE TABLE IF NOT EXISTS public.bench_task_wake (run_id uuid PRIMARY KEY,"
                + " resumed_at timestamptz NOT NULL)");
        Topic<Job> topic = Topic.of("task-wake-" + tag, Job.class);
        Saga<Job> saga = Saga.on(topic, "task-wake-" + tag)
                .step("open", s -> s.openTask("approval", s.payload(),
                        TaskOptions.none().key(key(tag, s.payload().n()))))
                .step("resume", s -> {
                    try (PreparedStatement ps = s.connection().prepareStatement(
                            "INSERT INTO public.bench_task_wake (run_id, resumed_at) VALUES (?, clock_timestamp())")) {
                        ps.setObject(1, s.runId());
                        ps.executeUpdate();
                    }
                })
                .build();
        SqlStats stats = new SqlStats();
        HikariDataSource callerPool = db.pool(2, "bench-caller-" + tag);
        long[] calls = new long[samples];
        List<String> failures = new ArrayList<>();
        try (CoopEngine engine = Coop.engine(env.pool).workers(o.workers).register(saga).start()) {
            CoopClient launcher = engine.client();
            CoopClient caller = Coop.client(stats.wrap(callerPool));
            caller.externalTask(key(tag, -1)); // warm the caller's connection; not counted below
            stats.reset();
            Duration timeout = Duration.ofSeconds(o.timeoutSeconds);
            for (int i = 0; i < samples; i++) {
                MessageId id = launcher.launch(topic, new Job(i));
                awaitOpen(launcher, key(tag, i), timeout);
                long start = System.nanoTime();
                caller.complete(key(tag, i), "approved");
                calls[i] = System.nanoTime() - start;
                Outcome outcome = launcher.awaitCompletion(id, timeout);
                if (outcome != Outcome.COMMITTED) {
                    failures.add("message " + id + " ended " + outcome);
                }
            }
        } finally {
            callerPool.close();
        }
        Verify.noFailures("task wake-up", failures);
        Verify.runsCommitted(db, saga.name(), samples);
        List<Map<String, Object>> rows = db.rows("""
                SELECT (extract(epoch FROM w.resumed_at - e.created_at) * 1000000)::bigint AS us
                  FROM public.bench_task_wake w
                  JOIN coop.run p ON p.id = w.run_id AND p.saga = ?
                  JOIN coop.run t ON t.parent_id = p.id AND t.saga = '~external-task'
                  JOIN coop.event e ON e.message_id = t.message_id AND e.type = 'COMMITTED' AND e.saga = t.saga
                """, saga.name());
        if (rows.size() != samples) {
            throw new IllegalStateException("task wake-up: expected " + samples + " resumed runs with a completed"
                    + " task, found " + rows.size());
        }
        long[] wake = Stats.sorted(rows.stream().mapToLong(r -> ((Number) r.get("us")).longValue() * 1000).toArray());
        long[] call = Stats.sorted(calls);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("wakeP50Ms", Stats.ms(Stats.percentile(wake, 50)));
        m.put("wakeP99Ms", Stats.ms(Stats.percentile(wake, 99)));
        m.put("wakeMaxMs", Stats.ms(wake[wake.length - 1]));
        m.put("callP50Ms", Stats.ms(Stats.percentile(call, 50)));
        m.put("callP99Ms", Stats.ms(Stats.percentile(call, 99)));
        m.put("statementsPerCompletion", Stats.round((double) stats.total("client", false) / samples, 2));
        m.put("roundTripsPerCompletion", Stats.round((double) stats.total("client", true) / samples, 2));
        m.put("jdbc", stats.table(samples));
        m.put("samples", samples);
        return m;
    }

    private static String key(String tag, int n) {
        return "bench/" + tag + "/" + n;
    }

    /** Waits for the step that opens the task to commit (the benchmark's own polling, not the caller's). */
    private static void awaitOpen(CoopClient client, String key, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (client.externalTask(key).filter(t -> t.state() == TaskState.OPEN).isEmpty()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("task " + key + " not open after " + timeout);
            }
            Thread.sleep(1);
        }
    }
}
