package dev.coop.bench;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.bench.Payloads.Job;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What-if runs for the profile: W1 (32 threads) on the unchanged engine, but with one cost removed from the
 * database schema after migration, to measure what each of the engine's costs is worth before anyone changes the
 * engine. Not in the default set of workloads ({@code --workloads experiments}).
 *
 * <ul>
 * <li>{@code baseline}: as W1.
 * <li>{@code no-fk}: the foreign keys of event and run on message dropped (a key-share row lock per event). Schema
 * version 13 dropped them, so on the current schema this variant is the baseline; {@code --workloads ab --ab-change
 * diet} measures them (and the CHECKs) against the shipped schema.
 * <li>{@code sql-cancel-check}: the PL/pgSQL {@code assert_not_cancelled} replaced by an inlinable SQL function
 * doing the same lookup (without raising: it shows the price of the PL/pgSQL call, not a drop-in fix).
 * <li>{@code no-notify}: the NOTIFY triggers dropped (one engine wakes itself in-process).
 * <li>{@code hot-runnable-at}: a BEFORE UPDATE trigger keeps {@code runnable_at} when a run stays RUNNABLE, so that
 * continuation steps can be HOT updates (the trigger's own cost is included: a fix in the engine's SQL is cheaper).
 * <li>{@code open-loop}: launches without awaiting each saga (no awaitCompletion polling), then waits for all.
 * <li>{@code combined}: no-fk + sql-cancel-check + no-notify + hot-runnable-at, open loop.
 * </ul>
 */
final class Experiments {
    private Experiments() {
    }

    static final List<String> VARIANTS = List.of("baseline", "no-fk", "sql-cancel-check", "no-notify",
            "hot-runnable-at", "open-loop", "combined");

    static void run(Options o, Report report) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        int threads = 32;
        Map<String, Runs> byVariant = new LinkedHashMap<>();
        for (String v : VARIANTS) {
            byVariant.put(v, new Runs("experiment " + v));
        }
        // rounds: every variant once per round, so that drift on the shared machine hits all variants alike; the
        // first round(s) are the warm-ups
        for (int i = 0; i < o.warmups + o.runs; i++) {
            boolean warm = i < o.warmups;
            for (String v : VARIANTS) {
                Map<String, Object> m;
                try (RunEnv env = RunEnv.fresh(o, "exp_" + v.replace('-', '_'), true)) {
                    List<String> applied = apply(env.db, v);
                    m = v.equals("open-loop") || v.equals("combined")
                            ? openLoop(o, env, o.w1Sagas, threads, "x" + i)
                            : Throughput.w1(o, env.db, env.pool, env.physTxPerSec, o.w1Sagas, threads, "x" + i);
                    m.put("applied", applied);
                    env.bracket(m);
                }
                byVariant.get(v).add(m, warm, warm ? "warm-up" : "round " + (i - o.warmups + 1) + "/" + o.runs);
            }
        }
        String name = "experiments: W1 " + o.w1Sagas + " sagas, " + threads + " threads";
        Runs base = byVariant.get("baseline");
        for (String v : VARIANTS) {
            Runs runs = byVariant.get(v);
            // paired with the baseline of the same round
            for (int r = 0; r < runs.measured.size(); r++) {
                Map<String, Object> m = runs.measured.get(r);
                Map<String, Object> b = base.measured.get(r);
                for (String k : List.of("stepsPerSec", "cpuUsPerStep", "pgCpuUsPerStep", "jvmCpuUsPerStep")) {
                    if (m.get(k) instanceof Number x && b.get(k) instanceof Number y) {
                        m.put(k + "VsBaseline", Stats.round(x.doubleValue() / y.doubleValue(), 3));
                    }
                }
            }
            out.put(v, runs.toMap());
            report.row(name, v + ": steps/s", runs, "stepsPerSec", "ratioToPhys", null, null);
            if (!v.equals("baseline")) {
                report.row(name, v + ": steps/s vs baseline (same round)", runs, "stepsPerSecVsBaseline", null, null,
                        null);
            }
            report.row(name, v + ": CPU us/step (JVM + PostgreSQL)", runs, "cpuUsPerStep", null, null, null);
            report.row(name, v + ": PostgreSQL CPU us/step", runs, "pgCpuUsPerStep", null, null, null);
            if (!v.equals("baseline")) {
                report.row(name, v + ": CPU/step vs baseline (same round)", runs, "cpuUsPerStepVsBaseline", null,
                        null, null);
            }
        }
        report.workloads.put("experiments", out);
    }

    private static List<String> apply(BenchDb db, String variant) {
        List<String> sql = new ArrayList<>();
        boolean all = variant.equals("combined");
        if (variant.equals("no-fk") || all) {
            for (Map<String, Object> fk : db.rows("""
                    SELECT conrelid::regclass::text AS rel, conname FROM pg_constraint
                     WHERE contype = 'f' AND connamespace = 'coop'::regnamespace
                       AND confrelid = 'coop.message'::regclass""")) {
                sql.add("ALTER TABLE " + fk.get("rel") + " DROP CONSTRAINT " + fk.get("conname"));
            }
        }
        if (variant.equals("sql-cancel-check") || all) {
            if (db.longValue("SELECT count(*) FROM pg_proc WHERE proname = 'assert_not_cancelled'"
                    + " AND pronamespace = 'coop'::regnamespace") > 0) {
                sql.add("""
                        CREATE OR REPLACE FUNCTION coop.assert_not_cancelled(scope uuid[]) RETURNS boolean
                        LANGUAGE sql STABLE AS $$
                          SELECT NOT EXISTS (SELECT 1 FROM coop.cancellation c WHERE c.scope_id = ANY(scope))
                        $$""");
            }
        }
        if (variant.equals("no-notify") || all) {
            for (Map<String, Object> t : db.rows("""
                    SELECT tgname FROM pg_trigger WHERE tgrelid = 'coop.run'::regclass AND NOT tgisinternal
                       AND tgname LIKE '%notify%'""")) {
                sql.add("DROP TRIGGER " + t.get("tgname") + " ON coop.run");
            }
        }
        if (variant.equals("hot-runnable-at") || all) {
            sql.add("""
                    CREATE FUNCTION public.bench_keep_runnable_at() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                      IF OLD.status = 'RUNNABLE' AND NEW.status = 'RUNNABLE' AND NEW.runnable_at <= clock_timestamp()
                      THEN
                        NEW.runnable_at := OLD.runnable_at;
                      END IF;
                      RETURN NEW;
                    END $$""");
            sql.add("CREATE TRIGGER bench_keep_runnable_at BEFORE UPDATE ON coop.run FOR EACH ROW"
                    + " EXECUTE FUNCTION public.bench_keep_runnable_at()");
        }
        for (String s : sql) {
            db.exec(s);
        }
        return sql;
    }

    /** W1 without awaiting: every thread launches its share at once; then wait until all runs committed. */
    static Map<String, Object> openLoop(Options o, RunEnv env, int sagas, int threads, String tag)
            throws InterruptedException {
        BenchDb db = env.db;
        Topic<Job> topic = Topic.of("w1-" + tag, Job.class);
        Saga<Job> saga = Saga.on(topic, "w1-saga-" + tag)
                .step("a", s -> {
                })
                .step("b", s -> {
                })
                .step("c", s -> {
                })
                .build();
        long watermark = Verify.maxEventId(db);
        long start;
        long end;
        Cpu.Snapshot c0;
        Cpu.Snapshot c1;
        try (CoopEngine engine = Coop.engine(env.pool).workers(o.workers).register(saga).start()) {
            CoopClient client = engine.client();
            AtomicInteger next = new AtomicInteger();
            List<Thread> list = new ArrayList<>();
            c0 = Cpu.take();
            start = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                Thread th = Thread.ofPlatform().name("bench-launcher-" + t).start(() -> {
                    int i;
                    while ((i = next.getAndIncrement()) < sagas) {
                        client.launch(topic, new Job(i));
                    }
                });
                list.add(th);
            }
            for (Thread th : list) {
                th.join();
            }
            long deadline = System.nanoTime() + o.timeoutSeconds * 1_000_000_000L;
            while (db.longValue("SELECT count(*) FROM coop.run WHERE saga = ? AND status = 'COMMITTED'",
                    saga.name()) < sagas) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("open loop: not all sagas committed in time");
                }
                Thread.sleep(5);
            }
            end = System.nanoTime();
            c1 = Cpu.take();
        }
        Verify.runsCommitted(db, saga.name(), sagas);
        Verify.messages(db, topic.name(), sagas);
        Verify.events(db, watermark, Verify.eventCounts(sagas, sagas, 3L * sagas, sagas));
        double seconds = (end - start) / 1e9;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("sagasPerSec", Stats.round(sagas / seconds, 1));
        m.put("stepsPerSec", Stats.round(3 * sagas / seconds, 1));
        m.put("physTxPerSec", Stats.round(env.physTxPerSec, 1));
        m.put("ratioToPhys", Stats.round(3 * sagas / seconds / env.physTxPerSec, 3));
        m.put("elapsedSec", Stats.round(seconds, 3));
        Cpu.perUnit(m, c0, c1, 3.0 * sagas, "Step");
        m.put("cpu", Cpu.between(c0, c1));
        return m;
    }
}
