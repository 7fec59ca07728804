package dev.coop.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The benchmark's command line: the options it accepts, each with its help, and how they are read into
 * {@link Options} ({@code --quick} first, then each override in the order given; a bad value names its option).
 */
final class OptionParser {
    private static final Map<String, String> HELP = new LinkedHashMap<>();

    static {
        HELP.put("--workloads",
                "comma list of " + String.join(",", Options.ALL_WORKLOADS) + " (default all of these), or "
                        + String.join(",", Options.OPTIONAL_WORKLOADS));
        HELP.put("--runs", "measured runs per workload, median reported (default 3)");
        HELP.put("--warmups", "warm-up runs per workload (default 1)");
        HELP.put("--workers", "engine workers; pool = workers + 2 connections (default 8)");
        HELP.put("--timeout-s", "how long one saga may take before the run fails (default 600)");
        HELP.put("--phys-tx", "transactions per physical-limit run (default 6000)");
        HELP.put("--w1-sagas", "W1 sagas per run (default 2000)");
        HELP.put("--w1-threads", "W1 client thread counts (default 8,32,128)");
        HELP.put("--versus-threads", "W1 client thread counts of workloads versus and ab (default 1,8,32,128)");
        HELP.put("--profile-at", "versus: the W1 client thread count whose runs are profiled on the server"
                + " (pg_stat_statements, pg_locks, perf; default 8)");
        HELP.put("--statement-stats", "on (default) or off: the embedded durable server preloads pg_stat_statements");
        HELP.put("--perf", "versus: one more W1 run per system at --profile-at threads in the first measured round,"
                + " PostgreSQL's CPU sampled with perf (linux-perf) and folded into function families");
        HELP.put("--lock-sample-ms", "versus: milliseconds between pg_locks samples in the profiled runs (default 25)");
        HELP.put("--w1-single-sagas", "W1 sagas of a run with one client thread (default 400)");
        HELP.put("--ab-rounds", "rounds of workload ab, each running every variant once (default 4)");
        HELP.put("--ab-builds", "workload ab compares two builds: git refs before,after (e.g. main,HEAD), each"
                + " checked out and built under target/ab-builds/ and run in JVMs of their own, alternating");
        HELP.put("--ab-change", "workload ab compares database settings in one build instead: diet (schema version"
                + " 13: before it, as shipped, and without the inspection indexes of run) or fillfactor (run's fill"
                + " factor 100, 70, 50) or plans (PostgreSQL's plan choice, or generic plans only)");
        HELP.put("--slow-sagas", "W1 sagas per slow-commit run of workload ab (default 200)");
        HELP.put("--durability", "durable (default: the embedded server with fsync, synchronous_commit and"
                + " full_page_writes on, as users run) or fast (the test server: all three off, to isolate CPU cost)");
        HELP.put("--w2-parents", "W2 parents per run (default 200)");
        HELP.put("--w2-inflight", "W2 parents in flight (default 16)");
        HELP.put("--w2-children", "W2 children per parent (default 10)");
        HELP.put("--w2-floor-parents", "parents of the extra W2 run with 1 in flight, 0 to skip (default 40)");
        HELP.put("--w3-chains", "W3 chains per run (default 50)");
        HELP.put("--w3-depth", "W3 levels per chain (default 10)");
        HELP.put("--w3-inflight", "W3 chains in flight (default 10)");
        HELP.put("--w3-floor-chains", "chains of the extra W3 run with 1 in flight, 0 to skip (default 20)");
        HELP.put("--wake-samples", "wake-up samples per run with notifications (default 200)");
        HELP.put("--wake-inflight", "wake-up parents in flight with notifications (default 1)");
        HELP.put("--wake-poll-samples", "wake-up samples per run in poll-only mode, launched at random moments"
                + " over 3 poll intervals (default 60)");
        HELP.put("--task-wake-samples", "external tasks completed one at a time per taskwake run (default 200)");
        HELP.put("--lookup-runs", "workload lookups: runs of finished history with business keys and tags"
                + " (default 10000000)");
        HELP.put("--poll-ms", "engine poll interval in poll-only mode (default 1000, Coop's default)");
        HELP.put("--history-events", "events of finished history inserted (default 10000000)");
        HELP.put("--history-sagas", "W1 sagas per history run (default 2000)");
        HELP.put("--history-threads", "W1 client threads in the history workload (default 32)");
        HELP.put("--prune-hierarchies",
                "finished hierarchies loaded, then pruned while W1 runs (workload prune; default 1000000)");
        HELP.put("--idle-seconds", "length of one idle measurement (default 60)");
        HELP.put("--idle-warmup-seconds", "idle warm-up before measuring (default 10)");
        HELP.put("--idle-sagas", "sagas registered by the idle engine (default 50)");
        HELP.put("--big-fanout", "messages emitted by the one big step (default 10000)");
        HELP.put("--profile-sagas", "W1 sagas of the instrumented profile run (default 2000)");
        HELP.put("--profile-threads", "client threads of the profile runs (default 32)");
        HELP.put("--growth-widths", "workload growth: children per parent (default 1,10,100,1000)");
        HELP.put("--growth-depths", "workload growth: chain depths (default 1,10,50)");
        HELP.put("--growth-engines", "workload growth: engines on one database, each its own pool (default 1,2,3)");
        HELP.put("--growth-children", "workload growth: child runs per width measurement (default 2000)");
        HELP.put("--growth-levels", "workload growth: levels per depth measurement (default 500)");
        HELP.put("--growth-inflight", "workload growth: parents or chains in flight (default 8)");
        HELP.put("--growth-sagas", "workload growth: W1 sagas per engine-count run (default 2000)");
        HELP.put("--growth-threads", "workload growth: W1 client threads of the engine-count runs (default 32)");
        HELP.put("--sweep-threads", "workload sweep: W1 client thread counts (default 1,2,4,8,16,32,64)");
        HELP.put("--sweep-engines", "workload sweep: engine counts, one line each (default 1)");
        HELP.put("--sweep-sagas", "workload sweep: W1 sagas per run (default 1000)");
        HELP.put("--plot", "workload sweep: the PNG written (default docs/images/throughput-vs-threads.png)");
        HELP.put("--replot", "draw the sweep's PNG again from an earlier run's JSON (into --plot), run nothing");
        HELP.put("--citus-rounds", "workload citus: measured rounds, each running W1 and W2 on plain PostgreSQL,"
                + " plain poll-only and the Citus cluster, alternating (default 3)");
        HELP.put("--citus-threads", "workload citus: W1 client threads (default 8)");
        HELP.put("--citus-poll-ms", "workload citus: the cluster's engine poll intervals; the first is the throughput"
                + " runs' and plain poll-only's, each is a wake-up run (default 50,10,200)");
        HELP.put("--citus-wake-samples", "workload citus: wake-up samples per run, one launch at a time (default 60)");
        HELP.put("--citus-variants", "workload citus: throughput variants, of plain, plain-poll, citus, citus-1conn"
                + " (default all)");
        HELP.put("--citus-wake-rounds", "workload citus: wake-up runs per mode (default 1)");
        HELP.put("--out", "directory of the JSON results (default bench-results/)");
        HELP.put("--keep", "keep the databases instead of dropping them");
        HELP.put("--quick", "small sizes, no warm-up, one measured run: a smoke run of about a minute");
    }

    private OptionParser() {
    }

    static Options parse(String[] args) {
        Options o = new Options();
        o.raw = List.of(args);
        List<String> list = new ArrayList<>(Arrays.asList(args));
        if (list.contains("--help") || list.contains("-h")) {
            System.out.println(usage());
            System.exit(0);
        }
        flags(o, list);
        for (int i = 0; i < list.size(); i++) {
            String arg = list.get(i);
            int eq = arg.indexOf('=');
            if (eq > 0) {
                set(o, arg.substring(0, eq), arg.substring(eq + 1).strip());
            } else if (i + 1 >= list.size()) {
                throw new IllegalArgumentException("Missing value after " + arg + "\n" + usage());
            } else {
                set(o, arg, list.get(++i).strip());
            }
        }
        if (o.workloads.contains("ab") && (o.abBuilds == null) == (o.abChange == null)) {
            throw new IllegalArgumentException("workload ab compares either two builds (--ab-builds before,after) or"
                    + " database settings in one build (--ab-change diet|fillfactor|plans): give one of them");
        }
        return o;
    }

    /** The options without a value, taken out of {@code list} wherever they are; {@code --quick} is applied first. */
    private static void flags(Options o, List<String> list) {
        if (list.remove("--quick")) {
            o.quick();
        }
        if (list.remove("--perf")) {
            o.perf = true;
        }
        if (list.remove("--keep")) {
            o.keep = true;
        }
    }

    private static void set(Options o, String key, String v) {
        if (!run(o, key, v) && !comparison(o, key, v) && !size(o, key, v) && !growthOrSweep(o, key, v)
                && !citus(o, key, v)) {
            throw new IllegalArgumentException("Unknown option " + key + "\n" + usage());
        }
    }

    /** What to run, how often, with how many workers, where the results go; whether {@code key} is one of them. */
    private static boolean run(Options o, String key, String v) {
        switch (key) {
            case "--workloads" -> o.workloads = workloads(v);
            case "--runs" -> o.runs = positive(key, v);
            case "--warmups" -> o.warmups = nonNegative(key, v);
            case "--workers" -> o.workers = positive(key, v);
            case "--timeout-s" -> o.timeoutSeconds = positive(key, v);
            case "--durability" -> o.durable = oneOf(key, v, "durable", "fast").equals("durable");
            case "--out" -> o.out = Path.of(v);
            default -> {
                return false;
            }
        }
        return true;
    }

    /** The side-by-side comparison (versus) and the A/B runs (ab); whether {@code key} is one of them. */
    private static boolean comparison(Options o, String key, String v) {
        switch (key) {
            case "--versus-threads" -> o.versusThreads = list(key, v);
            case "--ab-rounds" -> o.abRounds = positive(key, v);
            case "--profile-at" -> o.serverProfileThreads = positive(key, v);
            case "--lock-sample-ms" -> o.lockSampleMs = positive(key, v);
            case "--statement-stats" -> o.statementStats = oneOf(key, v, "on", "off").equals("on");
            case "--w1-single-sagas" -> o.w1SingleSagas = positive(key, v);
            case "--slow-sagas" -> o.slowSagas = positive(key, v);
            case "--ab-change" -> {
                if (!List.of("diet", "fillfactor", "plans").contains(v)) {
                    throw new IllegalArgumentException("--ab-change is diet, fillfactor or plans, was '" + v
                            + "' (compare code with --ab-builds before,after)");
                }
                o.abChange = v;
            }
            case "--ab-builds" -> {
                List<String> refs = Arrays.stream(v.split(",")).map(String::strip).toList();
                if (refs.size() != 2 || refs.stream().anyMatch(r -> r.isEmpty() || r.startsWith("-"))) {
                    throw new IllegalArgumentException("--ab-builds is two git refs, before,after (e.g. main,HEAD),"
                            + " was '" + v + "'");
                }
                o.abBuilds = refs;
            }
            default -> {
                return false;
            }
        }
        return true;
    }

    /** The sizes of the workloads that run by default, and of lookups and prune; whether {@code key} is one of them. */
    private static boolean size(Options o, String key, String v) {
        switch (key) {
            case "--phys-tx" -> o.physTx = positive(key, v);
            case "--w1-sagas" -> o.w1Sagas = positive(key, v);
            case "--w1-threads" -> o.w1Threads = list(key, v);
            case "--w2-parents" -> o.w2Parents = positive(key, v);
            case "--w2-inflight" -> o.w2InFlight = positive(key, v);
            case "--w2-children" -> o.w2Children = positive(key, v);
            case "--w2-floor-parents" -> o.w2FloorParents = nonNegative(key, v);
            case "--w3-chains" -> o.w3Chains = positive(key, v);
            case "--w3-depth" -> o.w3Depth = positive(key, v);
            case "--w3-inflight" -> o.w3InFlight = positive(key, v);
            case "--w3-floor-chains" -> o.w3FloorChains = nonNegative(key, v);
            case "--wake-samples" -> o.wakeSamples = positive(key, v);
            case "--wake-inflight" -> o.wakeInFlight = positive(key, v);
            case "--wake-poll-samples" -> o.wakePollSamples = positive(key, v);
            case "--poll-ms" -> o.pollMs = positive(key, v);
            case "--task-wake-samples" -> o.taskWakeSamples = positive(key, v);
            case "--lookup-runs" -> o.lookupRuns = Long.parseLong(v.replace("_", ""));
            case "--history-events" -> o.historyEvents = Long.parseLong(v.replace("_", ""));
            case "--history-sagas" -> o.historySagas = positive(key, v);
            case "--history-threads" -> o.historyThreads = positive(key, v);
            case "--prune-hierarchies" -> o.pruneHierarchies = Long.parseLong(v.replace("_", ""));
            case "--idle-seconds" -> o.idleSeconds = positive(key, v);
            case "--idle-warmup-seconds" -> o.idleWarmupSeconds = nonNegative(key, v);
            case "--idle-sagas" -> o.idleSagas = positive(key, v);
            case "--big-fanout" -> o.bigFanout = positive(key, v);
            case "--profile-sagas" -> o.profileSagas = positive(key, v);
            case "--profile-threads" -> o.profileThreads = list(key, v);
            default -> {
                return false;
            }
        }
        return true;
    }

    /** The workloads growth and sweep, and the sweep's plot; whether {@code key} is one of them. */
    private static boolean growthOrSweep(Options o, String key, String v) {
        switch (key) {
            case "--growth-widths" -> o.growthWidths = list(key, v);
            case "--growth-depths" -> o.growthDepths = list(key, v);
            case "--growth-engines" -> o.growthEngines = list(key, v);
            case "--growth-children" -> o.growthChildren = positive(key, v);
            case "--growth-levels" -> o.growthLevels = positive(key, v);
            case "--growth-inflight" -> o.growthInFlight = positive(key, v);
            case "--growth-sagas" -> o.growthSagas = positive(key, v);
            case "--growth-threads" -> o.growthThreads = positive(key, v);
            case "--sweep-threads" -> o.sweepThreads = list(key, v);
            case "--sweep-engines" -> o.sweepEngines = list(key, v);
            case "--sweep-sagas" -> o.sweepSagas = positive(key, v);
            case "--plot" -> o.plot = Path.of(v);
            case "--replot" -> o.replot = Path.of(v);
            default -> {
                return false;
            }
        }
        return true;
    }

    /** The workload citus; whether {@code key} is one of its options. */
    private static boolean citus(Options o, String key, String v) {
        switch (key) {
            case "--citus-rounds" -> o.citusRounds = positive(key, v);
            case "--citus-threads" -> o.citusThreads = positive(key, v);
            case "--citus-poll-ms" -> o.citusPollMs = list(key, v);
            case "--citus-wake-samples" -> o.citusWakeSamples = positive(key, v);
            case "--citus-wake-rounds" -> o.citusWakeRounds = positive(key, v);
            case "--citus-variants" -> {
                List<String> names = Arrays.stream(v.split(",")).map(String::strip).filter(n -> !n.isEmpty()).toList();
                List<String> known = List.of("plain", "plain-poll", "citus", "citus-1conn");
                if (names.isEmpty() || !known.containsAll(names)) {
                    throw new IllegalArgumentException("--citus-variants is a comma list of " + known + ", was '" + v
                            + "'");
                }
                o.citusVariants = names;
            }
            default -> {
                return false;
            }
        }
        return true;
    }

    /** The workloads named in a comma list, in its order; each must be known. */
    private static Set<String> workloads(String v) {
        Set<String> workloads = new LinkedHashSet<>();
        for (String w : v.toLowerCase(Locale.ROOT).split(",")) {
            String name = w.strip();
            if (name.isEmpty()) {
                continue;
            }
            if (!Options.ALL_WORKLOADS.contains(name) && !Options.OPTIONAL_WORKLOADS.contains(name)) {
                throw new IllegalArgumentException("Unknown workload '" + name + "'; known: " + Options.ALL_WORKLOADS
                        + " and " + Options.OPTIONAL_WORKLOADS);
            }
            workloads.add(name);
        }
        return workloads;
    }

    /** {@code v}, which must be {@code a} or {@code b}. */
    private static String oneOf(String key, String v, String a, String b) {
        if (!v.equals(a) && !v.equals(b)) {
            throw new IllegalArgumentException(key + " is " + a + " or " + b + ", was '" + v + "'");
        }
        return v;
    }

    private static int[] list(String key, String v) {
        return Arrays.stream(v.split(",")).map(String::strip).mapToInt(s -> positive(key, s)).toArray();
    }

    private static int positive(String key, String v) {
        int n = nonNegative(key, v);
        if (n < 1) {
            throw new IllegalArgumentException(key + " must be at least 1, was " + v);
        }
        return n;
    }

    private static int nonNegative(String key, String v) {
        try {
            int n = Integer.parseInt(v.replace("_", ""));
            if (n < 0) {
                throw new IllegalArgumentException(key + " must not be negative, was " + v);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " needs a number, was '" + v + "'", e);
        }
    }

    static String usage() {
        StringBuilder sb = new StringBuilder(
                "Usage: mvn -q -pl coop-bench validate exec:exec -Dbench.args=\"[options]\"\nOptions:\n");
        HELP.forEach((k, v) -> sb.append(String.format(Locale.ROOT, "  %-22s %s%n", k, v)));
        return sb.toString();
    }
}
