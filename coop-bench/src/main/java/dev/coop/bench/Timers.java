package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.inspect.Outcome;
import dev.coop.Saga;
import dev.coop.Topic;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Due-time lateness: how long after its due time a waiting run starts on an idle engine. Delayed launches are made
 * by a client of their own (so only the notification tells the engine the due time), spread over two seconds; the
 * run's step records {@code clock_timestamp()}; lateness = that minus the due time, both on the database's clock.
 * The target: an idle engine wakes within 100 ms of the due time.
 */
final class Timers {
    record Due(int n, Instant at) {
    }

    private Timers() {
    }

    static Map<String, Object> once(Options o, RunEnv env, int samples, String tag) {
        BenchDb db = env.db;
        db.exec("CREATE TABLE IF NOT EXISTS public.bench_timer (message_id uuid PRIMARY KEY, due timestamptz NOT NULL,"
                + " fired_at timestamptz NOT NULL)");
        Topic<Due> topic = Topic.of("timer-" + tag, Due.class);
        Saga<Due> saga = Saga.on(topic, "timer-" + tag)
                .step("fire", s -> {
                    try (PreparedStatement ps = s.connection().prepareStatement(
                            "INSERT INTO public.bench_timer (message_id, due, fired_at) VALUES (?, ?, clock_timestamp())")) {
                        ps.setObject(1, s.messageId().value());
                        ps.setObject(2, java.sql.Timestamp.from(s.payload().at()));
                        ps.executeUpdate();
                    }
                })
                .build();
        HikariDataSource clientPool = db.pool(4, "bench-timer-client-" + tag);
        try (CoopEngine engine = Coop.engine(env.pool).workers(o.workers).register(saga).start()) {
            CoopClient client = Coop.client(clientPool);
            Instant base = client.now().plusMillis(500);
            List<MessageId> ids = new ArrayList<>();
            for (int i = 0; i < samples; i++) {
                Instant at = base.plusMillis(2000L * i / samples);
                ids.add(client.launch(topic, new Due(i, at), at));
            }
            for (MessageId id : ids) {
                Outcome outcome = client.awaitCompletion(id, Duration.ofSeconds(o.timeoutSeconds));
                if (outcome != Outcome.COMMITTED) {
                    throw new IllegalStateException("timer run " + id + " ended " + outcome);
                }
            }
        } finally {
            clientPool.close();
        }
        Verify.runsCommitted(db, saga.name(), samples);
        List<Map<String, Object>> rows = db.rows(
                "SELECT (extract(epoch FROM fired_at - due) * 1000000)::bigint AS us FROM public.bench_timer t"
                        + " JOIN coop.run r ON r.message_id = t.message_id AND r.saga = ?",
                saga.name());
        if (rows.size() != samples) {
            throw new IllegalStateException("timers: expected " + samples + " fired runs, found " + rows.size());
        }
        long[] nanos = rows.stream().mapToLong(row -> ((Number) row.get("us")).longValue() * 1000).sorted()
                .toArray();
        if (nanos[0] < 0) {
            throw new IllegalStateException("timers: a run started " + Stats.ms(-nanos[0]) + " ms before it was due");
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("latenessP50Ms", Stats.ms(Stats.percentile(nanos, 50)));
        m.put("latenessP99Ms", Stats.ms(Stats.percentile(nanos, 99)));
        m.put("latenessMaxMs", Stats.ms(nanos[nanos.length - 1]));
        m.put("latenessMinMs", Stats.ms(nanos[0]));
        m.put("samples", samples);
        return m;
    }
}
