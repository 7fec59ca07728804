package dev.coop.bench;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.SagaLimits;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Time;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The claim statement alone, with and without saga limits, on a backlog of runnable runs: blocks of claims (each
 * BEGIN, claim, ROLLBACK on one connection, timed; then, untimed, the claimed run is taken out of the backlog, so that
 * every claim takes a run never claimed before, as in a real drain: claiming one run again and again would walk the
 * dead entries of its rolled-back {@code SEEN} events) alternating between a saga without limits and sagas with
 * limits that do not bind. Less noisy than W1 on a loaded machine: one connection, nothing but the claim.
 */
final class ClaimCost {
    private static final int BACKLOG = 3_000;
    private static final int BLOCKS = 20;
    /** Each variant claims BLOCKS / 2 blocks of this many runs: the backlog shrinks from 3,000 runs to 1,000. */
    private static final int CLAIMS_PER_BLOCK = 200;

    record Job(int n) {
    }

    private ClaimCost() {
    }

    static Map<String, Object> run(Options o) {
        Topic<Job> plainTopic = Topic.of("claim-plain", Job.class);
        Topic<Job> limitedTopic = Topic.of("claim-limited", Job.class);
        Saga<Job> plain = Saga.on(plainTopic, "claim-plain").step("go", s -> {
        }).build();
        Saga<Job> limited = Saga.on(limitedTopic, "claim-limited").concurrency(LimitsAb.CONCURRENCY)
                .rateLimit(LimitsAb.RATE, Duration.ofSeconds(1)).step("go", s -> {
                }).build();
        Topic<Job> slotsTopic = Topic.of("claim-slots", Job.class);
        Topic<Job> rateTopic = Topic.of("claim-rate", Job.class);
        Saga<Job> slots = Saga.on(slotsTopic, "claim-slots").concurrency(LimitsAb.CONCURRENCY).step("go", s -> {
        }).build();
        Saga<Job> rate = Saga.on(rateTopic, "claim-rate").rateLimit(LimitsAb.RATE, Duration.ofSeconds(1))
                .step("go", s -> {
                }).build();
        Topic<Job> leasedTopic = Topic.of("claim-leased", Job.class);
        Saga<Job> leased = Saga.on(leasedTopic, "claim-leased").concurrency(LimitsAb.CONCURRENCY)
                .rateLimit(LimitsAb.RATE, Duration.ofSeconds(1)).step("go", s -> {
                }).build();
        // 'leased': both limits, the rate tokens leased as the engine does (the lease's statements timed too)
        List<String> variants = List.of("plain", "limited", "slots", "rate", "leased");
        List<String> sagas = List.of(plain.name(), limited.name(), slots.name(), rate.name(), leased.name());
        Map<String, List<Double>> micros = new LinkedHashMap<>();
        try (RunEnv env = RunEnv.fresh(o, "limits_claim", false)) {
            try (CoopEngine engine = Coop.engine(env.pool).workers(1).register(plain, limited, slots, rate, leased)
                    .start()) {
                engine.id(); // registers both sagas (and the limits); the backlog is launched once it is closed
            }
            CoopClient client = Coop.client(env.pool);
            for (int i = 0; i < BACKLOG; i++) {
                client.launch(plainTopic, new Job(i));
                client.launch(limitedTopic, new Job(i));
                client.launch(slotsTopic, new Job(i));
                client.launch(rateTopic, new Job(i));
                client.launch(leasedTopic, new Job(i));
            }
            Store store = new Store(new SchemaName("coop"), Time.DATABASE);
            try (Connection c = env.pool.getConnection()) {
                store.limited(new SagaLimits(store.schema()).limited(c, sagas));
            }
            try (Connection c = env.pool.getConnection();
                    PreparedStatement done = c.prepareStatement(
                            "UPDATE coop.run SET status = 'WAITING' WHERE id = ?")) { // out of the backlog
                c.setAutoCommit(false);
                for (int block = 0; block < BLOCKS / 2 * variants.size(); block++) {
                    String saga = sagas.get(block % variants.size());
                    boolean leasing = variants.get(block % variants.size()).equals("leased");
                    long nanos = 0;
                    for (int i = 0; i < CLAIMS_PER_BLOCK; i++) {
                        long t0 = System.nanoTime();
                        if (leasing) {
                            store.refillLease(c, saga);
                        }
                        ClaimedRun run = store.claim(c, saga, 1, "bench");
                        c.rollback();
                        nanos += System.nanoTime() - t0;
                        if (run == null) {
                            throw new IllegalStateException("the claim of " + saga + " found nothing");
                        }
                        done.setObject(1, run.id());
                        done.executeUpdate();
                        c.commit();
                    }
                    double us = nanos / 1e3 / CLAIMS_PER_BLOCK;
                    micros.computeIfAbsent(variants.get(block % variants.size()), k -> new ArrayList<>()).add(us);
                }
                c.setAutoCommit(true);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("backlog", BACKLOG);
        m.put("claimsPerBlock", CLAIMS_PER_BLOCK);
        micros.forEach((k, v) -> {
            m.put(k + "BlocksUs", v);
            m.put(k + "MedianUs", Stats.round(Stats.median(v), 1));
        });
        m.put("loadAverageAfter", Bench.loadAverage());
        Bench.progress("claim cost: plain " + m.get("plainMedianUs") + " us, limited " + m.get("limitedMedianUs")
                + " us, slots only " + m.get("slotsMedianUs") + " us, rate only " + m.get("rateMedianUs")
                + " us, leased " + m.get("leasedMedianUs") + " us (claim + rollback, one connection)");
        return m;
    }

    static String table(Map<String, Object> m) {
        double plain = ((Number) m.get("plainMedianUs")).doubleValue();
        double limited = ((Number) m.get("limitedMedianUs")).doubleValue();
        double slots = ((Number) m.get("slotsMedianUs")).doubleValue();
        double rate = ((Number) m.get("rateMedianUs")).doubleValue();
        double leased = ((Number) m.get("leasedMedianUs")).doubleValue();
        String row = "| claim + rollback, %d-run backlog, distinct runs, one connection, %s (median of %d blocks of %d)"
                + " | %s µs"
                + " | %s µs | %s |";
        return String.join("\n",
                String.format(Locale.ROOT, row, m.get("backlog"), "both limits", BLOCKS / 2, CLAIMS_PER_BLOCK,
                        Report.fmt(plain), Report.fmt(limited), Report.fmt(limited / plain)),
                String.format(Locale.ROOT, row, m.get("backlog"), "concurrency only", BLOCKS / 2, CLAIMS_PER_BLOCK,
                        Report.fmt(plain), Report.fmt(slots), Report.fmt(slots / plain)),
                String.format(Locale.ROOT, row, m.get("backlog"), "rate only", BLOCKS / 2, CLAIMS_PER_BLOCK,
                        Report.fmt(plain), Report.fmt(rate), Report.fmt(rate / plain)),
                String.format(Locale.ROOT, row, m.get("backlog"), "both limits, rate tokens leased", BLOCKS / 2,
                        CLAIMS_PER_BLOCK, Report.fmt(plain), Report.fmt(leased), Report.fmt(leased / plain)));
    }
}
