package dev.coop.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The cost of saga limits that do not bind: W1 with its saga limited to {@value #CONCURRENCY} runs at once and
 * {@value #RATE} step starts per second (every claim takes a slot and a rate token) against W1 without limits, in
 * the same JVM, on the same server, alternating the variants; at each of {@code --versus-threads}.
 */
final class LimitsAb {
    /** The system property Throughput.w1 reads: give the W1 saga the limits below. */
    static final String LIMITED = "dev.coop.bench.w1Limits";
    /** Above the engine's workers: never binds. */
    static final int CONCURRENCY = 64;
    /**
     * Starts per second, far above what one machine runs: never binds (system property {@code bench.limitsRate}
     * overrides it, to see how the cost depends on the size of the rate window).
     */
    static final int RATE = Integer.getInteger("bench.limitsRate", 100_000);
    private static final List<String> VARIANTS = List.of("unlimited", "limited");

    private final Options o;
    private final Map<String, Runs> runs = new LinkedHashMap<>();

    private LimitsAb(Options o) {
        this.o = o;
    }

    static void run(Options o, Report report) {
        LimitsAb ab = new LimitsAb(o);
        try {
            for (int round = 0; round < o.abRounds; round++) {
                List<String> order = round % 2 == 0 ? VARIANTS : VARIANTS.reversed();
                for (String variant : order) {
                    ab.round(variant, round);
                }
            }
        } finally {
            System.clearProperty(LIMITED);
        }
        Map<String, Object> all = new LinkedHashMap<>();
        ab.runs.forEach((k, r) -> all.put(k, r.toMap()));
        Map<String, Object> claims = ClaimCost.run(o);
        all.put("claimCost", claims);
        report.workloads.put("limits", all);
        String table = ab.table() + "\n" + ClaimCost.table(claims);
        report.json.put("limitsTable", table);
        report.extra(table);
    }

    private void round(String variant, int round) {
        System.setProperty(LIMITED, Boolean.toString(variant.equals("limited")));
        String label = "round " + (round + 1) + "/" + o.abRounds;
        for (int threads : o.versusThreads) {
            String load = Bench.loadAverage();
            BenchDb db = BenchDb.create("limits_w1", o.keep);
            Map<String, Object> m;
            try (RunEnv env = RunEnv.on(o, db, "limits", false, true)) {
                settle(env);
                m = Throughput.w1(o, env.db, env.pool, Double.NaN, o.w1SagasAt(threads), threads, "limits");
            } catch (RuntimeException e) {
                db.close();
                throw e;
            }
            m.put("loadAverageBefore", load);
            m.put("load1Before", Double.parseDouble(load.split(" ")[0]));
            runs.computeIfAbsent(variant + " w1 " + threads, Runs::new).add(m, false, label);
        }
    }

    /**
     * Registers the W1 saga before the measured run, then VACUUM ANALYZE, in both variants: a saga is registered
     * once in its life, and its rate window (here {@value #RATE} rows, written at registration) is then a settled
     * table, not rows written a moment before the measurement that autovacuum processes during it.
     */
    private static void settle(RunEnv env) {
        try (dev.coop.CoopEngine engine = dev.coop.Coop.engine(env.pool).workers(1)
                .register(Throughput.w1Saga(dev.coop.Topic.of("w1-limits", Payloads.Job.class), "limits")).start()) {
            engine.id();
        }
        env.db.exec("VACUUM ANALYZE");
    }

    private double median(String name, String key) {
        Runs r = runs.get(name);
        return r == null ? Double.NaN : r.median(key);
    }

    String table() {
        List<String> rows = new ArrayList<>();
        rows.add("| saga limits that do not bind (" + o.abRounds + " alternating rounds) | unlimited | limited |"
                + " limited / unlimited |");
        rows.add("|---|---:|---:|---:|");
        for (int threads : o.versusThreads) {
            for (String key : List.of("stepsPerSec", "latencyP50Ms", "cpuUsPerStep", "load1Before")) {
                double u = median("unlimited w1 " + threads, key);
                double l = median("limited w1 " + threads, key);
                rows.add(String.format(Locale.ROOT, "| W1 %d threads %s (median) | %s | %s | %s |", threads, key,
                        Report.fmt(u), Report.fmt(l), Report.fmt(l / u)));
            }
        }
        return String.join("\n", rows);
    }
}
