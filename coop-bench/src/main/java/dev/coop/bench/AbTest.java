package dev.coop.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Two variants measured in the same run, on the same server, alternating (each round runs every variant once, the
 * order reversed every other round), so that drift of the machine falls on both alike.
 *
 * <p>A change of code is compared as two builds, {@code --ab-builds <before>,<after>} (two git refs, e.g.
 * {@code main,HEAD}): {@link AbBuilds} checks out and builds each, and each round runs each build in a JVM of its own
 * ({@link AbSide}): W1 at each of {@code --versus-threads}, W2, W3 and W1 with slow commits; the first round also
 * counts statements, round trips, commits and WAL per W1 step. Production code has no switch for it.
 *
 * <p>A change of the database's settings or schema is compared in this JVM, with {@code --ab-change}: {@code diet}
 * (the text CHECKs and foreign keys schema version 13 dropped, put back; as shipped; and without the two inspection
 * indexes of {@code run}), {@code fillfactor} (fill factors 100, 70 and 50 of {@code run}), {@code plans}
 * (PostgreSQL's plan choice, or generic plans only). See {@link SchemaVariant}.
 */
final class AbTest {
    private static final List<String> VARIANTS = List.of("before", "after");
    private static final List<String> DIET_VARIANTS = List.of("before", "after", "no-idx");
    private static final List<String> FILLFACTOR_VARIANTS = List.of("ff100", "ff70", "ff50");

    private final Options o;
    private final boolean builds;
    private final List<String> variants;
    private final Map<String, AbBuilds.Build> built = new LinkedHashMap<>();
    private final Map<String, Runs> runs = new LinkedHashMap<>();
    private final Map<String, Object> counts = new LinkedHashMap<>();

    private AbTest(Options o) {
        this.o = o;
        this.builds = o.abBuilds != null;
        this.variants = switch (builds ? "builds" : o.abChange) {
            case "diet" -> DIET_VARIANTS;
            case "fillfactor" -> FILLFACTOR_VARIANTS;
            default -> VARIANTS;
        };
    }

    static void run(Options o, Report report) {
        AbTest ab = new AbTest(o);
        if (ab.builds) {
            ab.built.put("before", AbBuilds.prepare(o.abBuilds.get(0)));
            ab.built.put("after", AbBuilds.prepare(o.abBuilds.get(1)));
            Map<String, Object> refs = new LinkedHashMap<>();
            ab.built.forEach((v, b) -> refs.put(v, b.ref() + " " + b.commit()));
            report.json.put("abBuilds", refs);
        }
        try {
            for (int round = 0; round < o.abRounds; round++) {
                List<String> order = round % 2 == 0 ? ab.variants : ab.variants.reversed();
                for (String variant : order) {
                    ab.round(variant, round);
                }
            }
        } finally {
            System.clearProperty(SchemaVariant.PROPERTY);
        }
        Map<String, Object> all = new LinkedHashMap<>();
        ab.runs.forEach((k, r) -> all.put(k, r.toMap()));
        all.put("counts", ab.counts);
        report.workloads.put("ab", all);
        String table = ab.table();
        report.json.put("abTable", table);
        report.extra(table);
    }

    /** Applies a variant of the database's settings or schema (the runs of this JVM read it as they start). */
    private void use(String variant) {
        System.setProperty(SchemaVariant.PROPERTY, switch (o.abChange) {
            case "plans" -> variant.equals("before") ? "shipped" : "generic-plans";
            case "fillfactor" -> "run-fillfactor-" + variant.substring(2);
            default -> switch (variant) { // diet
                case "before" -> "pre-diet";
                case "no-idx" -> "no-inspection-indexes";
                default -> "shipped";
            };
        });
    }

    @SuppressWarnings("unchecked")
    private void round(String variant, int round) {
        String label = "round " + (round + 1) + "/" + o.abRounds;
        Bench.progress("ab " + label + ": " + variant + (builds ? " (" + built.get(variant).ref() + ")" : ""));
        Map<String, Object> measured;
        if (builds) {
            measured = AbBuilds.side(built.get(variant), AbBuilds.sideArgs(o.raw), BenchDb.server(o.durable),
                    round == 0);
        } else {
            use(variant);
            measured = new AbRound(o, false, false).measure(round == 0);
        }
        if (measured.get("counts") != null) {
            counts.put(variant, measured.get("counts"));
        }
        ((Map<String, Object>) measured.get("runs")).forEach((name, m) -> runs
                .computeIfAbsent(variant + " " + name, Runs::new).add((Map<String, Object>) m, false, label));
    }

    private double median(String name, String key) {
        Runs r = runs.get(name);
        return r == null ? Double.NaN : r.median(key);
    }

    String table() {
        List<String> rows = new ArrayList<>();
        StringBuilder head = new StringBuilder("| A/B, same run (" + o.abRounds + " alternating rounds) |");
        StringBuilder line = new StringBuilder("|---|");
        for (String v : variants) {
            head.append(' ').append(v).append(" |");
            line.append("---:|");
        }
        for (String v : variants.subList(1, variants.size())) {
            head.append(' ').append(v).append(" / before |");
            line.append("---:|");
        }
        rows.add(head.toString());
        rows.add(line.toString());
        for (String metric : List.of("engineRoundTripsPerStep", "engineStatementsPerStep", "clientRoundTripsPerStep",
                "xactCommitPerStep", "walBytesPerStep", "runHotUpdatesPerStep")) {
            List<Double> values = new ArrayList<>();
            for (String v : variants) {
                values.add(counts.get(v) instanceof Map<?, ?> m && m.get(metric) instanceof Number n
                        ? n.doubleValue()
                        : Double.NaN);
            }
            rows.add(row("W1 " + metric + " (counted)", values));
        }
        List<String> names = new ArrayList<>();
        for (int threads : o.versusThreads) {
            names.add("w1 " + threads);
        }
        if (builds) {
            names.add(AbRound.slowName(o));
        }
        if (builds) {
            for (String[] row : new String[][]{{"w2", "parentP50Ms"}, {"w2", "stepsPerSec"}, {"w2", "cpuUsPerStep"},
                    {"w3", "chainP50Ms"}, {"w3", "levelsPerSec"}, {"w3", "cpuUsPerTx"}}) {
                List<Double> values = new ArrayList<>();
                for (String v : variants) {
                    values.add(median(v + " " + row[0], row[1]));
                }
                rows.add(row(row[0].toUpperCase(Locale.ROOT) + " " + row[1] + " (median)", values));
            }
        }
        for (String n : names) {
            for (String key : List.of("stepsPerSec", "latencyP50Ms", "cpuUsPerStep", "pgCpuUsPerStep")) {
                List<Double> values = new ArrayList<>();
                for (String v : variants) {
                    values.add(median(v + " " + n, key));
                }
                rows.add(row(n.toUpperCase(Locale.ROOT) + " " + key + " (median)", values));
            }
        }
        return String.join("\n", rows);
    }

    private static String row(String label, List<Double> values) {
        StringBuilder r = new StringBuilder("| " + label + " |");
        for (double v : values) {
            r.append(' ').append(Report.fmt(v)).append(" |");
        }
        for (double v : values.subList(1, values.size())) {
            r.append(' ').append(Report.fmt(v / values.getFirst())).append(" |");
        }
        return r.toString();
    }
}
