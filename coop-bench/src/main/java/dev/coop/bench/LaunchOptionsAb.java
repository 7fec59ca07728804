package dev.coop.bench;

import dev.coop.LaunchOptions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * W1 launched plainly and with every launch option set, alternating in one JVM on one server: "options" gives each
 * launch a priority (-10..10 in turn), an ordering key (one of 1,024 accounts, so runs of one key rarely meet in the
 * closed loop: this measures the cost of the options, not the serialisation) and an idempotency key of its own.
 */
final class LaunchOptionsAb {
    private static final String SWITCH = "dev.coop.bench.launchOptions";
    private static final List<String> VARIANTS = List.of("plain", "options");

    private final Options o;
    private final Map<String, Runs> runs = new LinkedHashMap<>();

    private LaunchOptionsAb(Options o) {
        this.o = o;
    }

    /** Whether W1 launches with options (set by this workload only). */
    static boolean on() {
        return Boolean.getBoolean(SWITCH);
    }

    static LaunchOptions options(int i) {
        return LaunchOptions.none().priority(i % 21 - 10).orderingKey("account-" + (i % 1024))
                .idempotencyKey("w1-" + i);
    }

    static void run(Options o, Report report) {
        LaunchOptionsAb ab = new LaunchOptionsAb(o);
        try {
            for (int round = 0; round < o.abRounds; round++) {
                for (String variant : round % 2 == 0 ? VARIANTS : VARIANTS.reversed()) {
                    ab.round(variant, round);
                }
            }
        } finally {
            System.clearProperty(SWITCH);
        }
        Map<String, Object> all = new LinkedHashMap<>();
        ab.runs.forEach((k, r) -> all.put(k, r.toMap()));
        report.workloads.put("options", all);
        String table = ab.table();
        report.json.put("optionsTable", table);
        report.extra(table);
    }

    private void round(String variant, int round) {
        System.setProperty(SWITCH, Boolean.toString(variant.equals("options")));
        for (int threads : o.versusThreads) {
            BenchDb db = BenchDb.create("opt_w1", o.keep);
            Map<String, Object> m;
            try (RunEnv env = RunEnv.on(o, db, "options", false, true)) {
                m = Throughput.w1(o, env.db, env.pool, Double.NaN, o.w1Sagas, threads, "opt");
            }
            m.put("loadAverageBefore", Bench.loadAverage());
            runs.computeIfAbsent(variant + " w1 " + threads, Runs::new)
                    .add(m, false, "round " + (round + 1) + "/" + o.abRounds);
        }
    }

    private String table() {
        List<String> rows = new ArrayList<>();
        rows.add("| W1, launch options (" + o.abRounds + " alternating rounds) | plain | options | options / plain |");
        rows.add("|---|---:|---:|---:|");
        for (int threads : o.versusThreads) {
            for (String key : List.of("stepsPerSec", "latencyP50Ms", "cpuUsPerStep")) {
                Runs p = runs.get("plain w1 " + threads);
                Runs a = runs.get("options w1 " + threads);
                double b = p == null ? Double.NaN : p.median(key);
                double x = a == null ? Double.NaN : a.median(key);
                rows.add(String.format(Locale.ROOT, "| W1 %d threads %s (median) | %s | %s | %s |", threads, key,
                        Report.fmt(b), Report.fmt(x), Report.fmt(x / b)));
            }
        }
        return String.join("\n", rows);
    }
}
