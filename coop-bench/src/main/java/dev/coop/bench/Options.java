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

/** The benchmark's parameters: defaults from the performance targets, {@code --quick} for a smoke run, then overrides. */
final class Options {
    static final List<String> ALL_WORKLOADS = List.of("phys", "w1", "w2", "w3", "wakeup", "taskwake", "timers",
            "history",
            "idle", "bigfanout", "profile");
    /** Workloads that run only when named. */
    static final List<String> OPTIONAL_WORKLOADS = List.of("versus", "ab", "limits", "options", "experiments",
            "prune", "observed", "growth", "sweep", "spring", "lookups");

    Set<String> workloads = new LinkedHashSet<>(ALL_WORKLOADS);
    int runs = 3;
    int warmups = 1;
    /** Engine workers; every engine gets a pool of workers + 2 connections. */
    int workers = 8;
    int timeoutSeconds = 600;

    int physTx = 6_000;

    int w1Sagas = 2_000;
    int[] w1Threads = {8, 32, 128};

    int w2Parents = 200;
    int w2InFlight = 16;
    int w2Children = 10;
    /** Parents of the extra W2 variant with one parent in flight (its latency floor); 0 skips it. */
    int w2FloorParents = 40;

    int w3Chains = 50;
    int w3Depth = 10;
    int w3InFlight = 10;
    /** Chains of the extra W3 variant with one chain in flight (its latency floor); 0 skips it. */
    int w3FloorChains = 20;

    int wakeSamples = 200;
    int wakeInFlight = 1;
    int wakePollSamples = 60;
    long pollMs = 1_000;
    int taskWakeSamples = 200;

    long historyEvents = 10_000_000;
    int historySagas = 2_000;
    int historyThreads = 32;

    long pruneHierarchies = 1_000_000;
    long lookupRuns = 10_000_000;

    int idleSeconds = 60;
    int idleWarmupSeconds = 10;
    int idleSagas = 50;

    int bigFanout = 10_000;

    /** Client threads of W1 in the side-by-side comparison (workload versus) and the A/B runs (workload ab). */
    int[] versusThreads = {1, 8, 32, 128};
    /**
     * The W1 client thread count of {@code versus} whose runs are profiled on the server (pg_stat_statements,
     * pg_locks, perf): 8, or the first of {@code --versus-threads} when 8 is not among them.
     */
    int serverProfileThreads = 8;
    /** Preload pg_stat_statements on the embedded durable server (per-statement server times). */
    boolean statementStats = true;
    /** {@code versus}: a W1 run per system of its own whose server CPU perf samples (its sampling costs CPU). */
    boolean perf;
    /** Milliseconds between two pg_locks samples during the profiled runs. */
    int lockSampleMs = 25;
    /** W1 sagas of a run with one client thread (its latency, not its throughput, is what it measures). */
    int w1SingleSagas = 400;
    /** Rounds of the A/B runs (each round runs every variant once, in alternating order). */
    int abRounds = 4;
    /** What workload ab compares in one build (database settings), or null. */
    String abChange;
    /** The two git refs workload ab compares as builds (before, after), or null. */
    List<String> abBuilds;
    /** The arguments as given (a two-build A/B passes them on to each build's JVM). */
    List<String> raw = List.of();
    /** W1 sagas per run of the slow-commit A/B variant (commit_delay = 100 ms). */
    int slowSagas = 200;

    int profileSagas = 2_000;
    int[] profileThreads = {1, 8, 32};

    /** Workload growth: fan-out widths, depths, engine counts; children and levels per measurement. */
    int[] growthWidths = {1, 10, 100, 1_000};
    int[] growthDepths = {1, 10, 50};
    int[] growthEngines = {1, 2, 3};
    int growthChildren = 2_000;
    int growthLevels = 500;
    int growthInFlight = 8;
    int growthSagas = 2_000;
    int growthThreads = 32;

    /** Workload sweep: W1 throughput against client threads, one line per engine count, drawn as a PNG. */
    int[] sweepThreads = {1, 2, 4, 8, 16, 32, 64};
    int[] sweepEngines = {1};
    int sweepSagas = 1_000;
    Path plot = Path.of("docs/images/throughput-vs-threads.png");
    /** A JSON of an earlier run whose sweep is drawn again into {@link #plot}, instead of running anything. */
    Path replot;

    boolean quick;
    /** Durable commits on the embedded server (fsync, synchronous_commit, full_page_writes on); else the fast one. */
    boolean durable = true;
    boolean keep;
    Path out = Path.of(System.getProperty("bench.out", "bench-results"));

    private static final Map<String, String> HELP = new LinkedHashMap<>();

    static {
        HELP.put("--workloads", "comma list of " + String.join(",", ALL_WORKLOADS) + " (default all of these), or "
                + String.join(",", OPTIONAL_WORKLOADS));
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
        HELP.put("--out", "directory of the JSON results (default bench-results/)");
        HELP.put("--keep", "keep the databases instead of dropping them");
        HELP.put("--quick", "small sizes, no warm-up, one measured run: a smoke run of about a minute");
    }

    /** W1 sagas of a run with {@code threads} client threads: fewer with one thread, which measures latency. */
    int w1SagasAt(int threads) {
        return threads == 1 ? Math.min(w1Sagas, w1SingleSagas) : w1Sagas;
    }

    /** The W1 client thread count of {@code versus} profiled on the server: one of {@code --versus-threads}. */
    int profiledThreads() {
        return Arrays.stream(versusThreads).anyMatch(t -> t == serverProfileThreads)
                ? serverProfileThreads
                : versusThreads[0];
    }

    /**
     * The client thread count of the slow-commit W1 runs: the largest of {@code --versus-threads} up to 32 (at 128,
     * each client thread would launch under two of the slow runs' sagas).
     */
    int slowThreads() {
        return Arrays.stream(versusThreads).filter(t -> t <= 32).max()
                .orElse(Arrays.stream(versusThreads).min().orElse(32));
    }

    static Options parse(String[] args) {
        Options o = new Options();
        o.raw = List.of(args);
        List<String> list = new ArrayList<>(Arrays.asList(args));
        if (list.contains("--help") || list.contains("-h")) {
            System.out.println(usage());
            System.exit(0);
        }
        if (list.remove("--quick")) {
            o.quick();
        }
        if (list.remove("--perf")) {
            o.perf = true;
        }
        if (list.remove("--keep")) {
            o.keep = true;
        }
        for (int i = 0; i < list.size(); i++) {
            String arg = list.get(i);
            String key;
            String value;
            int eq = arg.indexOf('=');
            if (eq > 0) {
                key = arg.substring(0, eq);
                value = arg.substring(eq + 1);
            } else {
                key = arg;
                if (i + 1 >= list.size()) {
                    throw new IllegalArgumentException("Missing value after " + arg + "\n" + usage());
                }
                value = list.get(++i);
            }
            o.set(key, value.strip());
        }
        if (o.workloads.contains("ab") && (o.abBuilds == null) == (o.abChange == null)) {
            throw new IllegalArgumentException("workload ab compares either two builds (--ab-builds before,after) or"
                    + " database settings in one build (--ab-change diet|fillfactor|plans): give one of them");
        }
        return o;
    }

    private void quick() {
        quick = true;
        runs = 1;
        w1SingleSagas = 50;
        warmups = 0;
        physTx = 1_000;
        w1Sagas = 200;
        w1Threads = new int[]{8, 32};
        w2Parents = 32;
        w3Chains = 10;
        w2FloorParents = 8;
        w3FloorChains = 5;
        wakeSamples = 30;
        wakePollSamples = 10;
        taskWakeSamples = 30;
        lookupRuns = 100_000;
        pollMs = 200;
        historyEvents = 150_000;
        historySagas = 200;
        pruneHierarchies = 20_000;
        idleSeconds = 3;
        idleWarmupSeconds = 1;
        bigFanout = 1_000;
        profileSagas = 200;
        timeoutSeconds = 120;
        abRounds = 2;
        slowSagas = 40;
        growthWidths = new int[]{1, 10, 100};
        growthDepths = new int[]{1, 10};
        growthEngines = new int[]{1, 2};
        growthChildren = 200;
        growthLevels = 100;
        growthSagas = 200;
        sweepThreads = new int[]{1, 4, 16};
        sweepSagas = 100;
        plot = out.resolve("throughput-vs-threads-quick.png");
    }

    private void set(String key, String v) {
        switch (key) {
            case "--workloads" -> {
                workloads = new LinkedHashSet<>();
                for (String w : v.toLowerCase(Locale.ROOT).split(",")) {
                    String name = w.strip();
                    if (name.isEmpty()) {
                        continue;
                    }
                    if (!ALL_WORKLOADS.contains(name) && !OPTIONAL_WORKLOADS.contains(name)) {
                        throw new IllegalArgumentException("Unknown workload '" + name + "'; known: " + ALL_WORKLOADS
                                + " and " + OPTIONAL_WORKLOADS);
                    }
                    workloads.add(name);
                }
            }
            case "--runs" -> runs = positive(key, v);
            case "--warmups" -> warmups = nonNegative(key, v);
            case "--workers" -> workers = positive(key, v);
            case "--timeout-s" -> timeoutSeconds = positive(key, v);
            case "--phys-tx" -> physTx = positive(key, v);
            case "--w1-sagas" -> w1Sagas = positive(key, v);
            case "--w1-threads" -> w1Threads = Arrays.stream(v.split(",")).map(String::strip)
                    .mapToInt(s -> positive(key, s)).toArray();
            case "--versus-threads" -> versusThreads = Arrays.stream(v.split(",")).map(String::strip)
                    .mapToInt(s -> positive(key, s)).toArray();
            case "--ab-rounds" -> abRounds = positive(key, v);
            case "--profile-at" -> serverProfileThreads = positive(key, v);
            case "--lock-sample-ms" -> lockSampleMs = positive(key, v);
            case "--statement-stats" -> {
                if (!v.equals("on") && !v.equals("off")) {
                    throw new IllegalArgumentException("--statement-stats is on or off, was '" + v + "'");
                }
                statementStats = v.equals("on");
            }
            case "--w1-single-sagas" -> w1SingleSagas = positive(key, v);
            case "--slow-sagas" -> slowSagas = positive(key, v);
            case "--ab-change" -> {
                if (!List.of("diet", "fillfactor", "plans").contains(v)) {
                    throw new IllegalArgumentException("--ab-change is diet, fillfactor or plans, was '" + v
                            + "' (compare code with --ab-builds before,after)");
                }
                abChange = v;
            }
            case "--ab-builds" -> {
                List<String> refs = Arrays.stream(v.split(",")).map(String::strip).toList();
                if (refs.size() != 2 || refs.stream().anyMatch(r -> r.isEmpty() || r.startsWith("-"))) {
                    throw new IllegalArgumentException("--ab-builds is two git refs, before,after (e.g. main,HEAD),"
                            + " was '" + v + "'");
                }
                abBuilds = refs;
            }
            case "--durability" -> {
                if (!v.equals("durable") && !v.equals("fast")) {
                    throw new IllegalArgumentException("--durability is durable or fast, was '" + v + "'");
                }
                durable = v.equals("durable");
            }
            case "--w2-parents" -> w2Parents = positive(key, v);
            case "--w2-inflight" -> w2InFlight = positive(key, v);
            case "--w2-children" -> w2Children = positive(key, v);
            case "--w3-chains" -> w3Chains = positive(key, v);
            case "--w2-floor-parents" -> w2FloorParents = nonNegative(key, v);
            case "--w3-floor-chains" -> w3FloorChains = nonNegative(key, v);
            case "--w3-depth" -> w3Depth = positive(key, v);
            case "--w3-inflight" -> w3InFlight = positive(key, v);
            case "--wake-samples" -> wakeSamples = positive(key, v);
            case "--task-wake-samples" -> taskWakeSamples = positive(key, v);
            case "--lookup-runs" -> lookupRuns = Long.parseLong(v.replace("_", ""));
            case "--wake-inflight" -> wakeInFlight = positive(key, v);
            case "--wake-poll-samples" -> wakePollSamples = positive(key, v);
            case "--poll-ms" -> pollMs = positive(key, v);
            case "--history-events" -> historyEvents = Long.parseLong(v.replace("_", ""));
            case "--history-sagas" -> historySagas = positive(key, v);
            case "--history-threads" -> historyThreads = positive(key, v);
            case "--prune-hierarchies" -> pruneHierarchies = Long.parseLong(v.replace("_", ""));
            case "--idle-seconds" -> idleSeconds = positive(key, v);
            case "--idle-warmup-seconds" -> idleWarmupSeconds = nonNegative(key, v);
            case "--idle-sagas" -> idleSagas = positive(key, v);
            case "--big-fanout" -> bigFanout = positive(key, v);
            case "--profile-sagas" -> profileSagas = positive(key, v);
            case "--profile-threads" -> profileThreads = list(key, v);
            case "--growth-widths" -> growthWidths = list(key, v);
            case "--growth-depths" -> growthDepths = list(key, v);
            case "--growth-engines" -> growthEngines = list(key, v);
            case "--growth-children" -> growthChildren = positive(key, v);
            case "--growth-levels" -> growthLevels = positive(key, v);
            case "--growth-inflight" -> growthInFlight = positive(key, v);
            case "--growth-sagas" -> growthSagas = positive(key, v);
            case "--growth-threads" -> growthThreads = positive(key, v);
            case "--sweep-threads" -> sweepThreads = list(key, v);
            case "--sweep-engines" -> sweepEngines = list(key, v);
            case "--sweep-sagas" -> sweepSagas = positive(key, v);
            case "--plot" -> plot = Path.of(v);
            case "--replot" -> replot = Path.of(v);
            case "--out" -> out = Path.of(v);
            default -> throw new IllegalArgumentException("Unknown option " + key + "\n" + usage());
        }
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

    int poolSize() {
        return workers + 2;
    }

    static String usage() {
        StringBuilder sb = new StringBuilder(
                "Usage: mvn -q -pl coop-bench validate exec:exec -Dbench.args=\"[options]\"\nOptions:\n");
        HELP.forEach((k, v) -> sb.append(String.format(Locale.ROOT, "  %-22s %s%n", k, v)));
        return sb.toString();
    }

    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("workloads", List.copyOf(workloads));
        m.put("quick", quick);
        m.put("runs", runs);
        m.put("warmups", warmups);
        m.put("workers", workers);
        m.put("poolSize", poolSize());
        m.put("physTx", physTx);
        m.put("w1Sagas", w1Sagas);
        m.put("w1Threads", Arrays.stream(w1Threads).boxed().toList());
        m.put("w2Parents", w2Parents);
        m.put("w2InFlight", w2InFlight);
        m.put("w2Children", w2Children);
        m.put("w2FloorParents", w2FloorParents);
        m.put("w3Chains", w3Chains);
        m.put("w3FloorChains", w3FloorChains);
        m.put("w3Depth", w3Depth);
        m.put("w3InFlight", w3InFlight);
        m.put("wakeSamples", wakeSamples);
        m.put("taskWakeSamples", taskWakeSamples);
        m.put("lookupRuns", lookupRuns);
        m.put("wakeInFlight", wakeInFlight);
        m.put("wakePollSamples", wakePollSamples);
        m.put("pollMs", pollMs);
        m.put("historyEvents", historyEvents);
        m.put("historySagas", historySagas);
        m.put("historyThreads", historyThreads);
        m.put("idleSeconds", idleSeconds);
        m.put("idleWarmupSeconds", idleWarmupSeconds);
        m.put("idleSagas", idleSagas);
        m.put("bigFanout", bigFanout);
        m.put("profileSagas", profileSagas);
        m.put("profileThreads", Arrays.stream(profileThreads).boxed().toList());
        m.put("timeoutSeconds", timeoutSeconds);
        m.put("durability", durable ? "durable" : "fast");
        m.put("versusThreads", Arrays.stream(versusThreads).boxed().toList());
        m.put("serverProfileThreads", profiledThreads());
        m.put("statementStats", statementStats);
        m.put("perf", perf);
        m.put("lockSampleMs", lockSampleMs);
        m.put("w1SingleSagas", w1SingleSagas);
        m.put("abRounds", abRounds);
        m.put("abChange", abChange);
        m.put("abBuilds", abBuilds);
        m.put("slowSagas", slowSagas);
        m.put("growthWidths", Arrays.stream(growthWidths).boxed().toList());
        m.put("growthDepths", Arrays.stream(growthDepths).boxed().toList());
        m.put("growthEngines", Arrays.stream(growthEngines).boxed().toList());
        m.put("growthChildren", growthChildren);
        m.put("growthLevels", growthLevels);
        m.put("growthInFlight", growthInFlight);
        m.put("growthSagas", growthSagas);
        m.put("growthThreads", growthThreads);
        m.put("sweepThreads", Arrays.stream(sweepThreads).boxed().toList());
        m.put("sweepEngines", Arrays.stream(sweepEngines).boxed().toList());
        m.put("sweepSagas", sweepSagas);
        m.put("plot", plot.toString());
        return m;
    }
}
