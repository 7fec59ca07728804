package dev.coop.bench;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.inspect.Outcome;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.bench.Payloads.Job;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * One step emits {@code --big-fanout} messages, each handled by a one-step child saga. Measured: the step's body
 * (inside), the statements that make it durable and the commit (around it, timed on the JDBC connection of the step),
 * and the time until every child run finished.
 */
final class BigFanOut {
    private BigFanOut() {
    }

    static Map<String, Object> once(Options o, RunEnv env, String tag) {
        int n = o.bigFanout;
        BenchDb db = env.db;
        SqlStats stats = new SqlStats();
        DataSource ds = stats.wrap(env.pool);
        Topic<Job> parentTopic = Topic.of("big-parent-" + tag, Job.class);
        Topic<Job> childTopic = Topic.of("big-child-" + tag, Job.class);
        AtomicLong bodyStart = new AtomicLong();
        AtomicLong bodyEnd = new AtomicLong();
        AtomicLong firstChild = new AtomicLong();
        AtomicLong lastChild = new AtomicLong();
        AtomicLong emitNanos = new AtomicLong();
        AtomicLong advanceNanos = new AtomicLong();
        AtomicLong commitNanos = new AtomicLong();
        AtomicLong commitEnd = new AtomicLong();
        Thread[] stepThread = new Thread[1];
        Saga<Job> parent = Saga.on(parentTopic, "big-parent-" + tag)
                .step("fan", s -> {
                    stepThread[0] = Thread.currentThread();
                    bodyStart.set(System.nanoTime());
                    for (int i = 0; i < n; i++) {
                        s.launch(childTopic, new Job(i));
                    }
                    bodyEnd.set(System.nanoTime());
                })
                .build();
        Saga<Job> child = Saga.on(childTopic, "big-child-" + tag)
                .step("only", s -> {
                    long now = System.nanoTime();
                    firstChild.compareAndSet(0, now);
                    lastChild.accumulateAndGet(now, Math::max);
                })
                .build();
        stats.listener = (label, start, end) -> {
            if (Thread.currentThread() == stepThread[0] && bodyEnd.get() != 0 && start >= bodyEnd.get()
                    && commitEnd.get() == 0) {
                switch (label) {
                    case "emit" -> emitNanos.addAndGet(end - start);
                    case "advance" -> advanceNanos.addAndGet(end - start);
                    case "COMMIT", "advance+COMMIT" -> { // a root's last advance goes with its COMMIT (and join check)
                        commitNanos.set(end - start);
                        commitEnd.set(end);
                    }
                    default -> {
                    }
                }
            }
        };
        long watermark = Verify.maxEventId(db);
        long t0;
        long t1;
        Cpu.Snapshot c0;
        Cpu.Snapshot c1;
        try (CoopEngine engine = Coop.engine(ds).workers(o.workers).register(parent, child).start()) {
            CoopClient client = engine.client();
            c0 = Cpu.take();
            t0 = System.nanoTime();
            MessageId id = client.launch(parentTopic, new Job(0));
            Outcome outcome = client.awaitCompletion(id, Duration.ofSeconds(o.timeoutSeconds));
            t1 = System.nanoTime();
            c1 = Cpu.take();
            if (outcome != Outcome.COMMITTED) {
                throw new IllegalStateException("big fan-out ended " + outcome);
            }
        }
        Verify.runsCommitted(db, parent.name(), 1);
        Verify.runsCommitted(db, child.name(), n);
        Verify.messages(db, parentTopic.name(), 1);
        Verify.messages(db, childTopic.name(), n);
        Verify.events(db, watermark, Verify.eventCounts(n + 1, n + 1, n + 1, n + 1));
        if (commitEnd.get() == 0) {
            throw new IllegalStateException("big fan-out: the commit of the emitting step was not observed");
        }
        Map<String, Object> dbTimes = db.rows("""
                SELECT extract(epoch FROM max(c.finished_at) - (SELECT max(e.created_at) FROM coop.event e
                         WHERE e.message_id = p.message_id AND e.type = 'SUSPENDED')) * 1000 AS children_done_ms,
                       extract(epoch FROM (SELECT max(e.created_at) FROM coop.event e WHERE e.message_id = p.message_id
                         AND e.type = 'SUSPENDED') - (SELECT min(e.created_at) FROM coop.event e
                         WHERE e.id > ? AND e.type = 'EMITTED' AND e.saga = p.saga)) * 1000 AS emit_to_advance_ms
                  FROM coop.run p JOIN coop.run c ON c.parent_id = p.id
                 WHERE p.saga = ?
                 GROUP BY p.message_id, p.saga""", watermark, parent.name()).getFirst();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("stepCommitMs", Stats.ms(commitEnd.get() - bodyEnd.get()));
        m.put("bodyMs", Stats.ms(bodyEnd.get() - bodyStart.get()));
        m.put("emitStatementMs", Stats.ms(emitNanos.get()));
        m.put("advanceStatementMs", Stats.ms(advanceNanos.get()));
        m.put("commitMs", Stats.ms(commitNanos.get()));
        m.put("firstChildAfterCommitMs", Stats.ms(firstChild.get() - commitEnd.get()));
        m.put("allChildrenDoneAfterCommitMs", Stats.ms(lastChild.get() - commitEnd.get()));
        m.put("allChildrenDoneDbMs", Stats.round(((Number) dbTimes.get("children_done_ms")).doubleValue(), 1));
        m.put("launchToParentCommittedMs", Stats.ms(t1 - t0));
        double childPerSec = n / ((lastChild.get() - firstChild.get()) / 1e9);
        m.put("childRunsPerSec", Stats.round(childPerSec, 1));
        m.put("physTxPerSec", Stats.round(env.physTxPerSec, 1));
        m.put("ratioToPhys", Stats.round(childPerSec / env.physTxPerSec, 3));
        long[] claims = Stats.sorted(stats.samples("engine", "claim"));
        m.put("claimP50Ms", Stats.ms(Stats.percentile(claims, 50)));
        m.put("claimP99Ms", Stats.ms(Stats.percentile(claims, 99)));
        long[] advances = Stats.sorted(stats.samples("engine", "advance"));
        m.put("advanceP50Ms", Stats.ms(Stats.percentile(advances, 50)));
        m.put("advanceP99Ms", Stats.ms(Stats.percentile(advances, 99)));
        m.put("children", n);
        m.put("jdbc", stats.table(n + 1));
        m.put("cpu", Cpu.between(c0, c1));
        return m;
    }
}
