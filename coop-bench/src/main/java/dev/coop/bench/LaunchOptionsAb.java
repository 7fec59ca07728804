package dev.coop.bench;

import dev.coop.LaunchOptions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * W1 launched plainly and with launch options, alternating in one JVM on one server: "priority" gives each launch a
 * priority (-10..10 in turn), "ordering" an ordering key (one of 1,024 accounts, so runs of one key rarely meet in the
 * closed loop: this measures the cost of the option, not the serialisation), "idempotency" an idempotency key of its
 * own, "options" all three.
 */
final class LaunchOptionsAb {
    private static final String SWITCH = "dev.coop.bench.launchOptions";
    private static final List<String> VARIANTS = List.of("plain", "priority", "ordering", "idempotency", "options");

    private final Options o;
    private final Map<String, Runs> runs = new LinkedHashMap<>();

    private LaunchOptionsAb(Options o) {
        this.o = o;
    }

    /** Whether W1 launches with options (set by this workload only). */
    static boolean on() {
        String v = System.getProperty(SWITCH, "plain");
        return !v.equals("plain");
    }

    /** The options of launch {@code i}: one kind alone, or all of them ("options"). */
    static LaunchOptions options(int i) {
        String v = System.getProperty(SWITCH, "plain");
        LaunchOptions o = LaunchOptions.none();
        if (v.equals("priority") || v.equals("options")) {
            o = o.priority(i % 21 - 10);
        }
        if (v.equals("ordering") || v.equals("options")) {
            o = o.orderingKey("account-" + (i % 1024));
        }
        if (v.equals("idempotency") || v.equals("options")) {
            o = o.idempotencyKey("w1-" + i);
        }
        return o;
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
        System.setProperty(SWITCH, variant);
        for (int threads : o.versusThreads) {
            BenchDb db = BenchDb.create("opt_w1", o.keep);
            Map<String, Object> m;
            try (RunEnv env = RunEnv.on(o, db, "options", false, true)) {
                m = Throughput.w1(o, env.db, env.pool, Double.NaN, o.w1SagasAt(threads), threads, "opt");
            }
            m.put("loadAverageBefore", Bench.loadAverage());
            runs.computeIfAbsent(variant + " w1 " + threads, Runs::new)
                    .add(m, false, "round " + (round + 1) + "/" + o.abRounds);
        }
    }

    private String table() {
        List<String> rows = new ArrayList<>();
        rows.add("| W1 (" + o.abRounds + " alternating rounds, medians) | " + String.join(" | ", VARIANTS) + " |");
        rows.add("|---" + "|---:".repeat(VARIANTS.size()) + "|");
        for (int threads : o.versusThreads) {
            for (String key : List.of("stepsPerSec", "latencyP50Ms", "latencyP95Ms", "cpuUsPerStep")) {
                StringBuilder row = new StringBuilder("| " + threads + " threads " + key + " |");
                double plain = runs.get("plain w1 " + threads).median(key);
                for (String v : VARIANTS) {
                    Runs r = runs.get(v + " w1 " + threads);
                    double x = r == null ? Double.NaN : r.median(key);
                    row.append(' ').append(Report.fmt(x));
                    if (!v.equals("plain")) {
                        row.append(String.format(Locale.ROOT, " (%.2f)", x / plain));
                    }
                    row.append(" |");
                }
                rows.add(row.toString());
            }
        }
        return String.join("\n", rows);
    }
}
