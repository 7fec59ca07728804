package dev.coop.bench;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.task.CompletionHandler;
import com.github.kagkarlsson.scheduler.task.helper.CustomTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * db-scheduler running W1: a unit is one task instance whose execution runs a no-op step and then, durably,
 * reschedules itself due now with the next step number (one row updated per step, the cheapest chain db-scheduler
 * offers); after the third step the execution is removed and the client is released. Same pool size and worker
 * count as Coop; polling with lock-and-fetch every {@value #POLL_MS} ms, and immediate execution on.
 */
final class DbSchedulerRunner {
    static final int POLL_MS = 10;
    private static final int STEPS = 3;

    /** The table of db-scheduler's PostgreSQL schema (written here from its documented columns). */
    private static final String TABLE = """
            CREATE TABLE scheduled_tasks (
              task_name            text                     NOT NULL,
              task_instance        text                     NOT NULL,
              task_data            bytea,
              execution_time       timestamp with time zone NOT NULL,
              picked               boolean                  NOT NULL,
              picked_by            text,
              last_success         timestamp with time zone,
              last_failure         timestamp with time zone,
              consecutive_failures int,
              last_heartbeat       timestamp with time zone,
              version              bigint                   NOT NULL,
              priority             smallint,
              PRIMARY KEY (task_name, task_instance)
            );
            CREATE INDEX execution_time_idx ON scheduled_tasks (execution_time);
            CREATE INDEX last_heartbeat_idx ON scheduled_tasks (last_heartbeat);
            CREATE INDEX priority_execution_time_idx ON scheduled_tasks (priority DESC, execution_time ASC);
            """;

    private DbSchedulerRunner() {
    }

    static Map<String, Object> w1(Options o, int units, int threads) {
        return w1(o, units, threads, false);
    }

    /** As {@link #w1(Options, int, int)}, with every commit delayed 100 ms when {@code slowCommits}. */
    static Map<String, Object> w1(Options o, int units, int threads, boolean slowCommits) {
        return w1(o, units, threads, slowCommits, null);
    }

    /** As above; with a {@code profile}, the measured window is observed on the server ({@link ServerProfile}). */
    static Map<String, Object> w1(Options o, int units, int threads, boolean slowCommits,
            ServerProfile.Mode profile) {
        try (BenchDb db = BenchDb.create("dbsched_w1", o.keep)) {
            if (slowCommits) {
                db.slowCommits();
            }
            Cpu.locatePostgres(db);
            db.exec(TABLE);
            HikariDataSource pool = db.pool(o.poolSize(), "dbsched-w1");
            Map<String, CountDownLatch> done = new ConcurrentHashMap<>();
            AtomicLong executions = new AtomicLong();
            CustomTask<Integer> task = Tasks.custom("w1", Integer.class)
                    .execute((instance, context) -> {
                        executions.incrementAndGet(); // the no-op step
                        int step = instance.getData();
                        return (CompletionHandler<Integer>) (complete, ops) -> {
                            if (step + 1 < STEPS) {
                                ops.reschedule(complete, Instant.now(), step + 1);
                            } else {
                                ops.remove();
                                CountDownLatch latch = done.get(instance.getId());
                                if (latch != null) {
                                    latch.countDown();
                                }
                            }
                        };
                    });
            Scheduler scheduler = Scheduler.create(pool, List.of(task))
                    .threads(o.workers)
                    .pollingInterval(Duration.ofMillis(POLL_MS))
                    .pollUsingLockAndFetch(0.5, 1.0)
                    .enableImmediateExecution()
                    .heartbeatInterval(Duration.ofSeconds(5))
                    .shutdownMaxWait(Duration.ofSeconds(5))
                    .build();
            Units.Result r;
            Cpu.Snapshot c0;
            Cpu.Snapshot c1;
            ServerProfile server = profile == null ? null : new ServerProfile(o, db, "db-scheduler", profile);
            scheduler.start();
            try {
                if (server != null) {
                    server.begin();
                }
                c0 = Cpu.take();
                r = Units.run(units, threads, i -> {
                    String id = "u" + i;
                    CountDownLatch latch = new CountDownLatch(1);
                    done.put(id, latch);
                    scheduler.schedule(task.instance(id, 0), Instant.now());
                    if (!latch.await(o.timeoutSeconds, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("unit " + id + " did not finish");
                    }
                });
                c1 = Cpu.take();
                if (server != null) {
                    server.end();
                }
            } finally {
                scheduler.stop();
            }
            pool.close();
            Map<String, Object> observed = server == null ? null : server.finish(units, (long) STEPS * units);
            Verify.noFailures("db-scheduler W1", r.failures());
            long left = db.longValue("SELECT count(*) FROM scheduled_tasks");
            if (left != 0 || executions.get() != (long) STEPS * units) {
                throw new IllegalStateException("db-scheduler W1 left " + left + " executions and ran "
                        + executions.get() + " steps; expected 0 and " + (long) STEPS * units);
            }
            double steps = (double) STEPS * units;
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("unitsPerSec", Stats.round(r.perSecond(units), 1));
            m.put("stepsPerSec", Stats.round(r.perSecond(steps), 1));
            Throughput.latencies(m, "latency", r.latencies());
            m.put("elapsedSec", Stats.round(r.elapsedNanos() / 1e9, 3));
            m.put("durable", Map.of("executionsLeft", left, "stepsRun", executions.get()));
            Cpu.perUnit(m, c0, c1, steps, "Step");
            m.put("cpu", Cpu.between(c0, c1));
            ServerTables.put(m, observed);
            return m;
        }
    }
}
