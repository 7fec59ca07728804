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
 *
 * <p>With {@code --ab-change diet} the variants are schemas instead ({@link SchemaVariant}): "before" puts back what
 * schema version 13 dropped (text CHECKs and foreign keys on the hot tables), "after" is the schema as shipped, and
 * "no-idx" also drops the two indexes of {@code run} that only inspection reads, to price them. No slow-commit runs
 * (the schema changes no commit).
 *
 * <p>With {@code --ab-change advance}, "before" sends every advance with the parent's count-off
 * ({@code dev.coop.internal.fullAdvance}), "after" only the advances of runs that finished with an awaited parent.
 * {@code --ab-change item3} compares both at once: "before" is the schema before version 13 with every advance
 * counting off, "after" the engine and schema as shipped.
 *
 * <p>With {@code --ab-change claims}, the variants add one change each to "before" (the engine with the
 * benchmark-only switches {@code dev.coop.internal.uncountedClaims}, {@code dev.coop.internal.unreserved} and
 * {@code dev.coop.internal.awaitReads}): "counted" (a claim owed per run this engine made due, instead of claiming until
 * a claim finds nothing), "reserved" (also a continuing run reserved for its worker between its commit and its
 * reclaim: schema version 15), "after" (also the outcome of a message launched by the engine's client learnt
 * in-process, without reading the database): the engine as shipped. This change also runs W2 and W3 once per variant
 * and round.
 *
 * <p>With {@code --ab-change lineage}, "before" stores a run's lineage as appended to ({@code array || id}, an
 * expanded array stored with a 4-byte header, which made the run's first update non-HOT), "after" as shipped.
 *
 * <p>With {@code --ab-change plans}, "after" runs on a database whose prepared statements always use their generic
 * plan ({@code plan_cache_mode = force_generic_plan}), "before" on PostgreSQL's default.
 *
 * <p>With {@code --ab-change reclaim}, "before" reclaims a continuing run with the full claim (the benchmark-only
 * switch {@code dev.coop.internal.fullReclaim}: its SEEN test, the message, the newest step instances), "after" as
 * shipped: the run's row alone, at the version the advance left. W2 and W3 run too.
 *
 * <p>With {@code --ab-change emit}, "before" emits one message with the statement for many (arrays, key handling:
 * the benchmark-only switch {@code dev.coop.internal.arrayEmit}), "after" as shipped (scalar parameters). W2 and W3
 * run too.
 *
 * <p>With {@code --ab-change slim}, "before" is the engine and schema without the fourth session's step-path changes
 * (the full reclaim of a continuation, one message emitted with the statement for many, the statement-level launch
 * notification, no retry of a counted claim that found nothing, every step's payload read before it runs), "after"
 * as shipped. W2 and W3 run too. (The {@code SEEN} test's function, a correctness fix, is in both.)
 *
 * <p>With {@code --ab-change triggers}, "before" has the run's trigger checks of schema version 17 and sets the run's
 * status and due time in every advance (the benchmark-only switch {@code dev.coop.internal.loudAdvance}), "after" as
 * shipped (schema version 18; a continuing advance sets neither). W2 and W3 run too.
 *
 * <p>With {@code --ab-change joincheck}, "before" sends a finishing root run's join lookup with its advance and the
 * COMMIT in a round trip of its own (the benchmark-only switch {@code dev.coop.internal.lookupThenCommit}), "after"
 * as shipped (schema version 19: the advance, a savepoint, the check and the COMMIT in one round trip). W2 and W3 run
 * too.
 *
 * <p>With {@code --ab-change fifth}, "before" is the engine and schema without the fifth session's step-path changes
 * (the triggers and the join check above, together), "after" as shipped. W2 and W3 run too.
 *
 * <p>With {@code --ab-change fillfactor}, the variants are fill factors of {@code run}: 100 (PostgreSQL's default), 70
 * and 50 (room on each page for the updates of its rows to be HOT).
 */
final class AbTest {
    private static final String SEPARATE_COMMITS = "dev.coop.internal.separateCommits";
    private static final String SELF_NOTIFY = "dev.coop.internal.selfNotify";
    private static final String FULL_ADVANCE = "dev.coop.internal.fullAdvance";
    private static final List<String> VARIANTS = List.of("before", "after");
    private static final List<String> DIET_VARIANTS = List.of("before", "after", "no-idx");
    private static final List<String> CLAIMS_VARIANTS = List.of("before", "counted", "reserved", "after");
    private static final List<String> FILLFACTOR_VARIANTS = List.of("ff100", "ff70", "ff50");
    private static final String UNCOUNTED = "dev.coop.internal.uncountedClaims";
    private static final String UNRESERVED = "dev.coop.internal.unreserved";
    private static final String AWAIT_READS = "dev.coop.internal.awaitReads";

    private final Options o;
    private final boolean noSlow;
    private final List<String> variants;
    private final Map<String, Runs> runs = new LinkedHashMap<>();
    private final Map<String, Object> counts = new LinkedHashMap<>();

    private AbTest(Options o) {
        this.o = o;
        this.noSlow = !o.abChange.equals("steps"); // the slow-commit runs price commits only
        this.variants = switch (o.abChange) {
            case "diet" -> DIET_VARIANTS;
            case "claims" -> CLAIMS_VARIANTS;
            case "fillfactor" -> FILLFACTOR_VARIANTS;
            default -> VARIANTS;
        };
    }

    static void run(Options o, Report report) {
        AbTest ab = new AbTest(o);
        try {
            for (int round = 0; round < o.abRounds; round++) {
                List<String> order = round % 2 == 0 ? ab.variants : ab.variants.reversed();
                for (String variant : order) {
                    ab.round(variant, round);
                }
            }
        } finally {
            ab.use("after");
        }
        Map<String, Object> all = new LinkedHashMap<>();
        ab.runs.forEach((k, r) -> all.put(k, r.toMap()));
        all.put("counts", ab.counts);
        report.workloads.put("ab", all);
        String table = ab.table();
        report.json.put("abTable", table);
        report.extra(table);
    }

    private void use(String variant) {
        if (o.abChange.equals("plans")) {
            System.setProperty(SchemaVariant.PROPERTY, variant.equals("before") ? "shipped" : "generic-plans");
            return;
        }
        if (o.abChange.equals("lineage")) {
            System.setProperty("dev.coop.internal.appendLineage", Boolean.toString(variant.equals("before")));
            return;
        }
        if (o.abChange.equals("fillfactor")) {
            System.setProperty(SchemaVariant.PROPERTY,
                    variant.startsWith("ff") ? "run-fillfactor-" + variant.substring(2) : "shipped");
            return;
        }
        if (o.abChange.equals("slim")) {
            boolean before = variant.equals("before");
            System.setProperty("dev.coop.internal.fullReclaim", Boolean.toString(before));
            System.setProperty("dev.coop.internal.arrayEmit", Boolean.toString(before));
            System.setProperty("dev.coop.internal.noClaimRetry", Boolean.toString(before));
            System.setProperty("dev.coop.internal.eagerPayload", Boolean.toString(before));
            System.setProperty(SchemaVariant.PROPERTY, before ? "statement-notify" : "shipped");
            return;
        }
        if (List.of("triggers", "joincheck", "fifth").contains(o.abChange)) { // fifth: the other two together
            boolean before = variant.equals("before");
            boolean triggers = !o.abChange.equals("joincheck");
            System.setProperty("dev.coop.internal.loudAdvance", Boolean.toString(before && triggers));
            System.setProperty(SchemaVariant.PROPERTY, before && triggers ? "v17-triggers" : "shipped");
            System.setProperty("dev.coop.internal.lookupThenCommit",
                    Boolean.toString(before && !o.abChange.equals("triggers")));
            return;
        }
        if (o.abChange.equals("emit")) {
            System.setProperty("dev.coop.internal.arrayEmit", Boolean.toString(variant.equals("before")));
            return;
        }
        if (o.abChange.equals("reclaim")) {
            System.setProperty("dev.coop.internal.fullReclaim", Boolean.toString(variant.equals("before")));
            return;
        }
        if (o.abChange.equals("claims")) {
            int changes = CLAIMS_VARIANTS.indexOf(variant); // each variant adds one change to the one before
            System.setProperty(UNCOUNTED, Boolean.toString(changes < 1));
            System.setProperty(UNRESERVED, Boolean.toString(changes < 2));
            System.setProperty(AWAIT_READS, Boolean.toString(changes < 3));
            return;
        }
        if (o.abChange.equals("advance") || o.abChange.equals("item3")) {
            System.setProperty(FULL_ADVANCE, Boolean.toString(variant.equals("before")));
        }
        if (o.abChange.equals("item3")) {
            System.setProperty(SchemaVariant.PROPERTY, variant.equals("before") ? "pre-diet" : "shipped");
        }
        if (!o.abChange.equals("steps") && !o.abChange.equals("diet")) {
            return;
        }
        if (o.abChange.equals("diet")) {
            System.setProperty(SchemaVariant.PROPERTY, switch (variant) {
                case "before" -> "pre-diet";
                case "no-idx" -> "no-inspection-indexes";
                default -> "shipped";
            });
            return;
        }
        boolean before = variant.equals("before");
        System.setProperty(SEPARATE_COMMITS, Boolean.toString(before));
        System.setProperty(SELF_NOTIFY, Boolean.toString(before));
    }

    private void round(String variant, int round) {
        use(variant);
        String label = "round " + (round + 1) + "/" + o.abRounds;
        if (round == 0) {
            Map<String, Object> p = Profile.once(o, "w1");
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("engineStatementsPerStep", p.get("engineStatementsPerUnit"));
            c.put("engineRoundTripsPerStep", p.get("engineRoundTripsPerUnit"));
            c.put("clientRoundTripsPerStep", p.get("clientRoundTripsPerUnit"));
            c.put("xactCommitPerStep", p.get("xactCommitPerUnit"));
            c.put("walBytesPerStep", p.get("walBytesPerUnit"));
            c.put("runHotUpdatesPerStep", p.get("runHotUpdatesPerUnit"));
            c.put("jdbc", p.get("jdbc"));
            counts.put(variant, c);
            Bench.progress("ab " + variant + " counts: " + Runs.summary(p));
        }
        for (int threads : o.versusThreads) {
            add(variant + " w1 " + threads, label, () -> w1(o.w1Sagas, threads, false));
        }
        if (withW2W3()) {
            add(variant + " w2", label, () -> fanIn(true));
            add(variant + " w3", label, () -> fanIn(false));
        }
        if (noSlow) {
            return;
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

    /** Whether the change is one of the step path's as a whole (claims, wake-ups): W2 and W3 are measured too. */
    private boolean withW2W3() {
        return List.of("claims", "reclaim", "emit", "slim", "triggers", "joincheck", "fifth").contains(o.abChange);
    }

    /** W2 (parents with children, {@code --w2-inflight} at once) or W3 (chains), each on a database of its own. */
    private Map<String, Object> fanIn(boolean w2) {
        BenchDb db = BenchDb.create(w2 ? "ab_w2" : "ab_w3", o.keep);
        try (RunEnv env = RunEnv.on(o, db, "ab", false, true)) {
            return w2
                    ? Throughput.w2(o, env.db, env.pool, Double.NaN, o.w2Parents, o.w2InFlight, "ab")
                    : Throughput.w3(o, env.db, env.pool, Double.NaN, o.w3Chains, o.w3InFlight, "ab");
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
        if (!noSlow) {
            names.add("slow w1 " + o.versusThreads[o.versusThreads.length - 1]);
        }
        if (withW2W3()) {
            for (String[] row : new String[][]{{"w2", "parentP50Ms"}, {"w2", "stepsPerSec"}, {"w2", "cpuUsPerStep"},
                    {"w3", "chainP50Ms"}, {"w3", "stepsPerSec"}, {"w3", "cpuUsPerStep"}}) {
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
