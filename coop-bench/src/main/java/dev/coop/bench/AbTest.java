package dev.coop.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Before and after the step-cost work of issue 16, in the same JVM, on the same server, alternating: "before" runs
 * the engine with the benchmark-only switches {@code dev.coop.internal.separateCommits} (COMMIT, the
 * continuation's reclaim, a root run's join lookup and a launch's COMMIT as round trips of their own, and an engine's
 * client polling from 5 ms) and {@code dev.coop.internal.selfNotify} (a NOTIFY for every
 * run made runnable, as before schema version 9); "after" runs it as shipped. Variants: W1 at each of
 * {@code --versus-threads}, and W1 with slow commits ({@code commit_delay} = 100 ms, {@code commit_siblings} = 0:
 * every WAL flush waits 100 ms, as with a synchronous standby far away). The first round also counts statements and
 * round trips per step (deterministic) through the JDBC counter.
 */
final class AbTest {
    private static final String SEPARATE_COMMITS = "dev.coop.internal.separateCommits";
    private static final String SELF_NOTIFY = "dev.coop.internal.selfNotify";
    private static final List<String> VARIANTS = List.of("before", "after");

    private final Options o;
    private final Map<String, Runs> runs = new LinkedHashMap<>();
    private final Map<String, Object> counts = new LinkedHashMap<>();

    private AbTest(Options o) {
        this.o = o;
    }

    static void run(Options o, Report report) {
        AbTest ab = new AbTest(o);
        try {
            for (int round = 0; round < o.abRounds; round++) {
                List<String> order = round % 2 == 0 ? VARIANTS : VARIANTS.reversed();
                for (String variant : order) {
                    ab.round(variant, round);
                }
            }
        } finally {
            use("after");
        }
        Map<String, Object> all = new LinkedHashMap<>();
        ab.runs.forEach((k, r) -> all.put(k, r.toMap()));
        all.put("counts", ab.counts);
        report.workloads.put("ab", all);
        String table = ab.table();
        report.json.put("abTable", table);
        report.extra(table);
    }

    private static void use(String variant) {
        boolean before = variant.equals("before");
        System.setProperty(SEPARATE_COMMITS, Boolean.toString(before));
        System.setProperty(SELF_NOTIFY, Boolean.toString(before));
    }

    private void round(String variant, int round) {
        use(variant);
        String label = "round " + (round + 1) + "/" + o.abRounds;
        if (round == 0) {
            Map<String, Object> p = Profile.once(o, "w1");
            counts.put(variant, Map.of("engineStatementsPerStep", p.get("engineStatementsPerUnit"),
                    "engineRoundTripsPerStep", p.get("engineRoundTripsPerUnit"),
                    "clientRoundTripsPerStep", p.get("clientRoundTripsPerUnit"),
                    "xactCommitPerStep", p.get("xactCommitPerUnit"), "jdbc", p.get("jdbc")));
            Bench.progress("ab " + variant + " counts: " + Runs.summary(p));
        }
        for (int threads : o.versusThreads) {
            add(variant + " w1 " + threads, label, () -> w1(o.w1Sagas, threads, false));
        }
        int slowThreads = o.versusThreads[o.versusThreads.length - 1];
        add(variant + " slow w1 " + slowThreads, label, () -> w1(o.slowSagas, slowThreads, true));
    }

    private Map<String, Object> w1(int sagas, int threads, boolean slowCommits) {
        BenchDb db = BenchDb.create(slowCommits ? "ab_slow" : "ab_w1", o.keep);
        try {
            if (slowCommits) {
                db.exec("ALTER DATABASE " + db.name + " SET commit_delay = 100000"); // generated name, not input
                db.exec("ALTER DATABASE " + db.name + " SET commit_siblings = 0");
            }
            try (RunEnv env = RunEnv.on(o, db, "ab", false, true)) {
                return Throughput.w1(o, env.db, env.pool, Double.NaN, sagas, threads, "ab");
            }
        } catch (RuntimeException e) {
            db.close();
            throw e;
        }
    }

    private void add(String name, String label, Supplier<Map<String, Object>> body) {
        String load = Bench.loadAverage();
        Map<String, Object> m = body.get();
        m.put("loadAverageBefore", load);
        m.put("load1Before", Double.parseDouble(load.split(" ")[0]));
        runs.computeIfAbsent(name, Runs::new).add(m, false, label);
    }

    private double median(String name, String key) {
        Runs r = runs.get(name);
        return r == null ? Double.NaN : r.median(key);
    }

    String table() {
        List<String> rows = new ArrayList<>();
        rows.add("| A/B, same run (" + o.abRounds + " alternating rounds) | before | after | after / before |");
        rows.add("|---|---:|---:|---:|");
        for (String metric : List.of("engineRoundTripsPerStep", "engineStatementsPerStep", "clientRoundTripsPerStep",
                "xactCommitPerStep")) {
            Object b = counts.get("before") instanceof Map<?, ?> m ? m.get(metric) : null;
            Object a = counts.get("after") instanceof Map<?, ?> m ? m.get(metric) : null;
            if (b instanceof Number nb && a instanceof Number na) {
                rows.add(String.format(Locale.ROOT, "| W1 %s (counted) | %s | %s | %s |", metric,
                        Report.fmt(nb.doubleValue()), Report.fmt(na.doubleValue()),
                        Report.fmt(na.doubleValue() / nb.doubleValue())));
            }
        }
        List<String> names = new ArrayList<>();
        for (int threads : o.versusThreads) {
            names.add("w1 " + threads);
        }
        names.add("slow w1 " + o.versusThreads[o.versusThreads.length - 1]);
        for (String n : names) {
            for (String key : List.of("stepsPerSec", "latencyP50Ms", "cpuUsPerStep")) {
                double b = median("before " + n, key);
                double a = median("after " + n, key);
                rows.add(String.format(Locale.ROOT, "| %s %s (median) | %s | %s | %s |", n.toUpperCase(Locale.ROOT),
                        key, Report.fmt(b), Report.fmt(a), Report.fmt(a / b)));
            }
        }
        return String.join("\n", rows);
    }
}
