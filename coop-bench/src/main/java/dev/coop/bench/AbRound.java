package dev.coop.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What one variant of workload ab measures in one round, in this JVM: on the first round the statements, round trips,
 * commits and WAL per W1 step (deterministic, through the JDBC counter); then W1 at each of {@code --versus-threads};
 * with {@code fanIn} W2 and W3; with {@code slow} W1 with slow commits ({@code commit_delay} = 100 ms,
 * {@code commit_siblings} = 0: every WAL flush waits 100 ms, as with a synchronous standby far away).
 *
 * @param fanIn whether W2 and W3 run too
 * @param slow whether W1 with slow commits runs too
 */
record AbRound(Options o, boolean fanIn, boolean slow) {

    /** The measurements: {@code counts} (first round only) and {@code runs}, one map per workload name. */
    Map<String, Object> measure(boolean counted) {
        Map<String, Object> result = new LinkedHashMap<>();
        if (counted) {
            result.put("counts", counts());
        }
        Map<String, Object> runs = new LinkedHashMap<>();
        for (int threads : o.versusThreads) {
            runs.put("w1 " + threads, timed(() -> w1(o.w1SagasAt(threads), threads, false)));
        }
        if (fanIn) {
            runs.put("w2", timed(() -> fanIn(true)));
            runs.put("w3", timed(() -> fanIn(false)));
        }
        if (slow) {
            runs.put(slowName(o), timed(() -> w1(o.slowSagas, o.slowThreads(), true)));
        }
        result.put("runs", runs);
        return result;
    }

    /** The name of the slow-commit W1 run. */
    static String slowName(Options o) {
        return "slow w1 " + o.slowThreads();
    }

    private Map<String, Object> counts() {
        Map<String, Object> p = Profile.once(o, "w1");
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("engineStatementsPerStep", p.get("engineStatementsPerUnit"));
        c.put("engineRoundTripsPerStep", p.get("engineRoundTripsPerUnit"));
        c.put("clientRoundTripsPerStep", p.get("clientRoundTripsPerUnit"));
        c.put("xactCommitPerStep", p.get("xactCommitPerUnit"));
        c.put("walBytesPerStep", p.get("walBytesPerUnit"));
        c.put("rounds", p.get("rounds"));
        c.put("runHotUpdatesPerStep", p.get("runHotUpdatesPerUnit"));
        c.put("jdbc", p.get("jdbc"));
        Bench.progress("ab counts: " + Runs.summary(p));
        return c;
    }

    private static Map<String, Object> timed(Supplier<Map<String, Object>> body) {
        String load = Bench.loadAverage();
        Map<String, Object> m = body.get();
        m.put("loadAverageBefore", load);
        m.put("load1Before", Double.parseDouble(load.split(" ")[0]));
        return m;
    }

    private Map<String, Object> w1(int sagas, int threads, boolean slowCommits) {
        BenchDb db = BenchDb.create(slowCommits ? "ab_slow" : "ab_w1", o.keep);
        try {
            if (slowCommits) {
                db.slowCommits();
            }
            try (RunEnv env = RunEnv.on(o, db, "ab", false, true)) {
                return Throughput.w1(o, env.db, env.pool, Double.NaN, sagas, threads, "ab");
            }
        } catch (RuntimeException e) {
            db.close();
            throw e;
        }
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
}
