package dev.coop.bench;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The benchmark's parameters: defaults from the performance targets, {@code --quick} for a smoke run, then overrides
 * ({@link OptionParser} reads them from the command line).
 */
final class Options {
    static final List<String> ALL_WORKLOADS = List.of("phys", "w1", "w2", "w3", "wakeup", "taskwake", "timers",
            "history",
            "idle", "bigfanout", "profile");
    /** Workloads that run only when named. */
    static final List<String> OPTIONAL_WORKLOADS = List.of("versus", "ab", "limits", "options", "experiments",
            "prune", "observed", "growth", "sweep", "spring", "lookups", "citus");

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

    /** Workload citus: alternating rounds of W1 and W2 per variant (after {@code --warmups} warm-up rounds). */
    int citusRounds = 3;
    /** Workload citus: W1 client threads. */
    int citusThreads = 8;
    /** Workload citus: poll intervals of the engines on the cluster; the first is the throughput runs'. */
    int[] citusPollMs = {50, 10, 200};
    /** Workload citus: wake-up samples per run, and runs per mode. */
    int citusWakeSamples = 60;
    int citusWakeRounds = 1;
    /** Workload citus: the variants of the throughput runs (CitusCost.VARIANTS). */
    List<String> citusVariants = List.of("plain", "plain-poll", "citus", "citus-1conn");

    boolean quick;
    /** Durable commits on the embedded server (fsync, synchronous_commit, full_page_writes on); else the fast one. */
    boolean durable = true;
    boolean keep;
    Path out = Path.of(System.getProperty("bench.out", "bench-results"));

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

    /** Small sizes, no warm-up, one measured run: a smoke run of about a minute. */
    void quick() {
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
        citusRounds = 1;
        citusWakeSamples = 20;
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

    int poolSize() {
        return workers + 2;
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
        m.put("citusRounds", citusRounds);
        m.put("citusThreads", citusThreads);
        m.put("citusPollMs", Arrays.stream(citusPollMs).boxed().toList());
        m.put("citusWakeSamples", citusWakeSamples);
        m.put("citusWakeRounds", citusWakeRounds);
        m.put("citusVariants", citusVariants);
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
