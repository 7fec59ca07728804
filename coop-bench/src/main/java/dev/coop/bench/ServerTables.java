package dev.coop.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The side-by-side run's server tables (docs/performance.md "Method"), from each system's profiled W1 runs
 * ({@link ServerProfile}): per W1 saga, statements, commits and execution time; the detail per statement with its
 * plan size; relations locked per backend; with {@code --perf}, PostgreSQL CPU per step by function family. Every
 * figure is the median over the measured runs.
 */
final class ServerTables {
    private static final String[][] SYSTEMS = {{"Coop", "coop w1 "}, {"DBOS Transact", "dbos w1 "},
            {"db-scheduler", "db-scheduler w1 "}};

    private final Map<String, Runs> runs;
    private final int threads;

    ServerTables(Map<String, Runs> runs, int threads) {
        this.runs = runs;
        this.threads = threads;
    }

    /** Puts a profiled run's server view into its metrics: nested as "server", the headline figures flat. */
    static void put(Map<String, Object> m, Map<String, Object> observed) {
        if (observed == null) {
            return;
        }
        for (String k : List.of("statementsPerSaga", "commitsPerSaga", "writeTransactionsPerSaga", "execUsPerSaga",
                "planUsPerSaga", "utilityExecUsPerSaga")) {
            if (observed.get(k) instanceof Number n) {
                m.put("pg" + Character.toUpperCase(k.charAt(0)) + k.substring(1), n);
            }
        }
        if (observed.get("locks") instanceof Map<?, ?> locks) {
            m.put("lockRelationsMax", locks.get("relationsMax"));
            m.put("lockRelationsMedian", locks.get("relationsMedian"));
            m.put("lockNonFastpathShare", locks.get("nonFastpathShare"));
        }
        if (observed.get("perf") instanceof Map<?, ?> perf && perf.get("usPerStep") instanceof Map<?, ?> fam) {
            m.put("perfPgUsPerStep", perf.get("postgresUsPerStep"));
            fam.forEach((k, v) -> m.put("perfUsPerStep " + k, v));
        }
        m.put("server", observed);
    }

    String tables() {
        List<String> out = new ArrayList<>();
        out.add(summary());
        out.add(detail());
        out.add(locks());
        String perf = perf();
        if (perf != null) {
            out.add(perf);
        }
        return String.join("\n\n", out);
    }

    private String summary() {
        List<String> rows = new ArrayList<>();
        rows.add("| per W1 saga, " + threads + " client threads | statements | commits | execution time |"
                + " planning time | COMMIT statements' time | write transactions |");
        rows.add("|---|---:|---:|---:|---:|---:|---:|");
        for (String[] s : SYSTEMS) {
            Runs r = runs.get(s[1] + threads);
            if (r == null || Double.isNaN(r.median("pgCommitsPerSaga"))) {
                continue;
            }
            String what = what(r);
            rows.add(String.format(Locale.ROOT, "| %s | %s | %s | %s us | %s us | %s us | %s |",
                    what.isEmpty() ? s[0] : s[0] + " (" + what + ")", Report.fmt(r.median("pgStatementsPerSaga")),
                    Report.fmt(r.median("pgCommitsPerSaga")),
                    Report.fmt(r.median("pgExecUsPerSaga")), Report.fmt(r.median("pgPlanUsPerSaga")),
                    Report.fmt(r.median("pgUtilityExecUsPerSaga")),
                    Report.fmt(r.median("pgWriteTransactionsPerSaga"))));
        }
        String skipped = skipped();
        return String.join("\n", rows) + (skipped == null ? "" : "\n\nNo statement figures: " + skipped + ".");
    }

    /** Why a profiled run has no statement figures, or null. */
    private String skipped() {
        for (String[] s : SYSTEMS) {
            Runs r = runs.get(s[1] + threads);
            if (r != null) {
                for (Map<String, Object> run : r.measured) {
                    if (run.get("server") instanceof Map<?, ?> server && server.get("statementsSkipped") != null) {
                        return String.valueOf(server.get("statementsSkipped"));
                    }
                }
            }
        }
        return null;
    }

    /** "launch 660, 2 x advance 210, ...": each statement kind's calls per saga and mean execution time. */
    private String what(Runs r) {
        List<String> parts = new ArrayList<>();
        for (Map<String, Object> d : medianStatements(r)) {
            double calls = (double) d.get("callsPerSaga");
            if ((Boolean) d.get("utility") || calls < 0.5) { // the hot path's, not the engine's probes
                continue;
            }
            String times = Math.abs(calls - 1) < 0.05 ? "" : Report.fmt(calls) + " x ";
            parts.add(times + d.get("label") + " " + Report.fmt((double) d.get("meanExecUs")));
        }
        return String.join(", ", parts);
    }

    private String detail() {
        List<String> rows = new ArrayList<>();
        rows.add("| System | Statement (W1, " + threads + " threads) | calls per saga | mean exec us | exec us per saga"
                + " | plan us per saga | plans per call | plan nodes | relations in plan |");
        rows.add("|---|---|---:|---:|---:|---:|---:|---:|---:|");
        for (String[] s : SYSTEMS) {
            Runs r = runs.get(s[1] + threads);
            if (r == null) {
                continue;
            }
            for (Map<String, Object> d : medianStatements(r)) {
                rows.add(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |", s[0],
                        d.get("label"), Report.fmt((double) d.get("callsPerSaga")),
                        Report.fmt((double) d.get("meanExecUs")), Report.fmt((double) d.get("execUsPerSaga")),
                        Report.fmt((double) d.get("planUsPerSaga")), Report.fmt((double) d.get("plansPerCall")),
                        plan(d, "nodes"), plan(d, "relations")));
            }
        }
        return String.join("\n", rows);
    }

    private static String plan(Map<String, Object> d, String key) {
        if (!(d.get("plan") instanceof Map<?, ?> p)) {
            return "";
        }
        Object v = p.get(key);
        return v != null ? String.valueOf(v) : p.containsKey("error") ? "n/a" : "";
    }

    /** The statement kinds of a system's measured runs, each number the median over the runs that had it. */
    private static List<Map<String, Object>> medianStatements(Runs r) {
        Map<String, List<Map<?, ?>>> byLabel = new LinkedHashMap<>();
        for (Map<String, Object> run : r.measured) {
            if (run.get("server") instanceof Map<?, ?> server && server.get("statements") instanceof List<?> list) {
                for (Object o : list) {
                    Map<?, ?> d = (Map<?, ?>) o;
                    byLabel.computeIfAbsent(String.valueOf(d.get("label")), k -> new ArrayList<>()).add(d);
                }
            }
        }
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map.Entry<String, List<Map<?, ?>>> e : byLabel.entrySet()) {
            Map<String, Object> m = new LinkedHashMap<>();
            Map<?, ?> first = e.getValue().getFirst();
            m.put("label", e.getKey());
            m.put("utility", first.get("utility"));
            for (String k : List.of("callsPerSaga", "meanExecUs", "execUsPerSaga", "planUsPerSaga", "plansPerCall")) {
                List<Double> v = new ArrayList<>();
                e.getValue().forEach(d -> v.add(ServerProfile.num(d.get(k))));
                m.put(k, Stats.median(v));
            }
            m.put("plan", first.get("plan"));
            out.add(m);
        }
        out.sort((a, b) -> Double.compare((double) b.get("execUsPerSaga"), (double) a.get("execUsPerSaga")));
        return out;
    }

    private String locks() {
        List<String> rows = new ArrayList<>();
        rows.add("| Relations locked per backend (W1, " + threads + " threads, pg_locks samples) | max | median | p90"
                + " | share beyond the 16 fast-path slots | most often held |");
        rows.add("|---|---:|---:|---:|---:|---|");
        for (String[] s : SYSTEMS) {
            Runs r = runs.get(s[1] + threads);
            if (r == null || Double.isNaN(r.median("lockRelationsMax"))) {
                continue;
            }
            List<Double> p90 = new ArrayList<>();
            String top = "";
            for (Map<String, Object> run : r.measured) {
                if (run.get("server") instanceof Map<?, ?> server && server.get("locks") instanceof Map<?, ?> l) {
                    p90.add(ServerProfile.num(l.get("relationsP90")));
                    if (top.isEmpty() && l.get("relations") instanceof List<?> rels) {
                        List<String> names = new ArrayList<>();
                        for (Object o : rels.subList(0, Math.min(8, rels.size()))) {
                            Map<?, ?> rel = (Map<?, ?>) o;
                            names.add(rel.get("relation") + " " + Report.fmt(
                                    ServerProfile.num(rel.get("shareOfBackendSamples"))));
                        }
                        top = String.join(", ", names);
                    }
                }
            }
            rows.add(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s |", s[0],
                    Report.fmt(r.median("lockRelationsMax")), Report.fmt(r.median("lockRelationsMedian")),
                    Report.fmt(Stats.median(p90)), Report.fmt(r.median("lockNonFastpathShare")), top));
        }
        return String.join("\n", rows);
    }

    /** PostgreSQL CPU µs per W1 step by function family, one column per system; null without --perf. */
    private String perf() {
        List<String[]> systems = new ArrayList<>();
        for (String[] s : SYSTEMS) {
            Runs r = runs.get(s[1] + threads + " perf");
            if (r != null && !Double.isNaN(r.median("perfPgUsPerStep"))) {
                systems.add(new String[]{s[0], s[1] + threads + " perf"});
            }
        }
        if (systems.isEmpty()) {
            return null;
        }
        StringBuilder head = new StringBuilder("| PostgreSQL CPU us per W1 step (perf, " + threads + " threads,"
                + " runs of its own) |");
        StringBuilder sep = new StringBuilder("|---|");
        for (String[] s : systems) {
            head.append(' ').append(s[0]).append(" | share |");
            sep.append("---:|---:|");
        }
        List<String> rows = new ArrayList<>(List.of(head.toString(), sep.toString()));
        List<String> families = new ArrayList<>();
        PerfProfile.FAMILIES.forEach(f -> families.add(f.getKey()));
        families.add("other");
        for (String f : families) {
            rows.add(perfRow(f, "perfUsPerStep " + f, systems));
        }
        rows.add(perfRow("all (sampled)", "perfPgUsPerStep", systems));
        return String.join("\n", rows);
    }

    private String perfRow(String name, String key, List<String[]> systems) {
        StringBuilder row = new StringBuilder("| " + name + " |");
        for (String[] s : systems) {
            Runs r = runs.get(s[1]);
            double v = r.median(key);
            double all = r.median("perfPgUsPerStep");
            row.append(' ').append(Report.fmt(v)).append(" | ")
                    .append(all > 0 ? String.format(Locale.ROOT, "%.0f %%", 100 * v / all) : "").append(" |");
        }
        return row.toString();
    }
}
