package dev.coop.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a step's cost goes: W1, W2 and W3 once each through the JDBC counter, with the database's own counters
 * (transactions, tuples, HOT updates, WAL bytes, and pg_stat_statements when the server preloads it) read after the
 * engine's connections closed, so that every backend flushed its statistics.
 */
final class Profile {
    private Profile() {
    }

    static void run(Options o, Report report) {
        Map<String, Object> out = new LinkedHashMap<>();
        List<String> runs = new java.util.ArrayList<>();
        for (int threads : o.profileThreads) {
            runs.add("w1@" + threads);
        }
        runs.addAll(List.of("w2", "w3"));
        for (String w : runs) {
            Map<String, Object> p = once(o, w);
            out.put(w, p);
            Bench.progress("profile " + w + ": " + Runs.summary(p));
            String name = "profile " + w.toUpperCase(java.util.Locale.ROOT).replace("@", ", ")
                    + (w.contains("@") ? " threads" : "") + " (per " + (w.equals("w3") ? "transaction" : "step") + ")";
            report.row(name, "engine statements", num(p, "engineStatementsPerUnit"), null, null);
            report.row(name, "engine round trips (statements + commits)", num(p, "engineRoundTripsPerUnit"), null,
                    null);
            report.row(name, "claims that found nothing", num(p, "emptyClaimsPerUnit"), null, null);
            report.row(name, "client round trips", num(p, "clientRoundTripsPerUnit"), null, null);
            report.row(name, "xact_commit (server)", num(p, "xactCommitPerUnit"), null, null);
            report.row(name, "rows inserted (server)", num(p, "tupInsertedPerUnit"), null, null);
            report.row(name, "run row updates", num(p, "runUpdatesPerUnit"), null, null);
            report.row(name, "run HOT updates", num(p, "runHotUpdatesPerUnit"), null, null);
            report.row(name, "index entries (at most)", num(p, "indexEntriesPerUnit"), null, null);
            report.row(name, "WAL bytes", num(p, "walBytesPerUnit"), null, null);
            report.row(name, "engine JVM CPU us", num(p, "engineCpuUsPerUnit"), null, null);
            if (p.get("rounds") instanceof Map<?, ?> r) {
                report.row(name, "steps in rounds (share)", num(castMap(r), "shareOfStepsInRounds"), null, null);
            }
        }
        report.workloads.put("profile", out);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> castMap(Map<?, ?> m) {
        return (Map<String, Object>) m;
    }

    /**
     * Index entries written, at most: for each table, its rows inserted and its updates that were not HOT, times its
     * indexes (a partial index whose predicate a row fails gets no entry, so this bounds the count from above).
     */
    static double indexEntries(Map<String, Object> delta, Map<String, Object> after) {
        double entries = 0;
        for (Map.Entry<String, Object> e : after.entrySet()) {
            if (!e.getKey().endsWith(".indexes") || !(e.getValue() instanceof Number indexes)) {
                continue;
            }
            String table = e.getKey().substring(0, e.getKey().length() - ".indexes".length());
            double writes = Idle.num(delta.get(table + ".n_tup_ins")) + Idle.num(delta.get(table + ".n_tup_upd"))
                    - Idle.num(delta.get(table + ".n_tup_hot_upd"));
            entries += writes * indexes.doubleValue();
        }
        return entries;
    }

    private static double num(Map<String, Object> m, String k) {
        Object o = m.get(k);
        return o instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    static Map<String, Object> once(Options o, String workload) {
        SqlStats stats = new SqlStats();
        RoundSizes rounds = new RoundSizes();
        try (RunEnv env = RunEnv.fresh(o, "profile_" + workload.replace("@", "_"), true)) {
            BenchDb db = env.db;
            boolean pss = db.pgStatStatements();
            if (pss) {
                db.exec("SELECT pg_stat_statements_reset()");
            }
            Map<String, Object> before = RunEnv.dbCounters(db);
            Map<String, Object> m;
            double units;
            switch (workload.replaceFirst("@.*", "")) {
                case "w1" -> {
                    int threads = workload.contains("@") // "w1@8"; plain "w1": the most threads profiled
                            ? Integer.parseInt(workload.substring(workload.indexOf('@') + 1))
                            : o.profileThreads[o.profileThreads.length - 1];
                    m = Throughput.w1(o, db, stats.wrap(env.pool), env.physTxPerSec, o.profileSagas,
                            threads, "p", 0, java.util.List.of(rounds));
                    units = 3.0 * o.profileSagas;
                }
                case "w2" -> {
                    m = Throughput.w2(o, db, stats.wrap(env.pool), env.physTxPerSec, o.w2Parents, o.w2InFlight, "p");
                    units = (double) o.w2Parents * (2 + 2 * o.w2Children);
                }
                default -> {
                    m = Throughput.w3(o, db, stats.wrap(env.pool), env.physTxPerSec, o.w3Chains, o.w3InFlight, "p");
                    units = (double) o.w3Chains * o.w3Depth + (double) o.w3Chains * (o.w3Depth - 1);
                }
            }
            String poolName = env.pool.getPoolName();
            env.pool.close();
            RunEnv.awaitBackendsGone(db, poolName);
            Map<String, Object> after = RunEnv.dbCounters(db);
            Map<String, Object> d = RunEnv.delta(db, before, after);
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("units", (long) units);
            p.put("unit", workload.equals("w3") ? "engine transaction" : "step");
            p.put("engineStatementsPerUnit", Stats.round(stats.total("engine", false) / units, 3));
            p.put("engineRoundTripsPerUnit", Stats.round(stats.total("engine", true) / units, 3));
            p.put("engineCommitsPerUnit", Stats.round(stats.calls("engine", "COMMIT") / units, 3));
            p.put("rounds", rounds.summary(units));
            long emptyClaims = 0;
            for (Map<String, Object> row : stats.table(1)) {
                if ("engine".equals(row.get("role")) && String.valueOf(row.get("kind")).contains("claim")) {
                    emptyClaims += ((Number) row.get("emptyResults")).longValue();
                }
            }
            p.put("emptyClaimsPerUnit", Stats.round(emptyClaims / units, 3));
            p.put("clientRoundTripsPerUnit", Stats.round(stats.total("client", true) / units, 3));
            p.put("xactCommitPerUnit", Stats.round(Idle.num(d.get("xact_commit")) / units, 3));
            p.put("tupInsertedPerUnit", Stats.round(Idle.num(d.get("tup_inserted")) / units, 3));
            p.put("tupUpdatedPerUnit", Stats.round(Idle.num(d.get("tup_updated")) / units, 3));
            p.put("runUpdatesPerUnit", Stats.round(Idle.num(d.get("run.n_tup_upd")) / units, 3));
            p.put("runHotUpdatesPerUnit", Stats.round(Idle.num(d.get("run.n_tup_hot_upd")) / units, 3));
            p.put("eventInsertsPerUnit", Stats.round(Idle.num(d.get("event.n_tup_ins")) / units, 3));
            p.put("indexEntriesPerUnit", Stats.round(indexEntries(d, after) / units, 3));
            p.put("walBytesPerUnit", Stats.round(Idle.num(d.get("walBytes")) / units, 1));
            p.put("engineCpuUsPerUnit", m.getOrDefault("engineCpuUsPerStep", m.get("engineCpuUsPerTx")));
            p.put("stepsPerSecInstrumented", m.get("stepsPerSec"));
            p.put("levelsPerSecInstrumented", m.get("levelsPerSec"));
            p.put("physTxPerSec", Stats.round(env.physTxPerSec, 1));
            p.put("jdbc", stats.table(units));
            p.put("sql", sqlTexts(stats));
            p.put("dbDelta", d);
            if (pss) {
                p.put("pgStatStatements",
                        db.rows("""
                                SELECT calls, round((calls / ?::numeric), 3) AS per_unit, rows, plans,
                                       round(mean_exec_time::numeric, 4) AS mean_ms, round(total_exec_time::numeric, 1) AS total_ms,
                                       round(total_plan_time::numeric, 1) AS plan_ms,
                                       round(((total_exec_time + total_plan_time) * 1000 / ?)::numeric, 1) AS us_per_unit,
                                       left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query
                                  FROM pg_stat_statements
                                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                                   AND query NOT ILIKE '%pg_stat%' AND query NOT ILIKE '%pg_current_wal_lsn%'
                                 ORDER BY total_exec_time + total_plan_time DESC LIMIT 25""",
                                units, units));
            }
            p.put("run", m);
            return p;
        }
    }

    private static Map<String, String> sqlTexts(SqlStats stats) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String k : List.of("claim", "reclaim", "emit", "advance", "runStatuses")) {
            String s = stats.sqlOf(k);
            if (s != null) {
                m.put(k, s.replaceAll("\\s+", " ").strip());
            }
        }
        return m;
    }
}
