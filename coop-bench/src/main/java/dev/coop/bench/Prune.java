package dev.coop.bench;

import dev.coop.Coop;
import com.zaxxer.hikari.HikariDataSource;
import dev.coop.CoopEngine;
import dev.coop.Saga;
import dev.coop.Topic;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What retention costs the engine: {@code --prune-hierarchies} finished hierarchies are loaded (as the history
 * workload writes them, spread over 30 days), then W1 runs before, during and after an engine's retention thread
 * ({@code retention(1 h)}: 100 hierarchies per transaction, resting nine times as long as each batch took) deletes
 * them. W1's own hierarchies are younger than the age, so every W1 run verifies everything it made durable. Reported: W1 during
 * pruning over W1 without (before and after, medians), and the pruning rate.
 */
final class Prune {
    private static final String TAG = "pr";

    private Prune() {
    }

    static void run(Options o, Report report) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        try (BenchDb db = BenchDb.create("prune", o.keep)) {
            RunEnv.migrate(db);
            Map<String, Object> load = History.load(db, o.pruneHierarchies * 15 / 2, "hist-" + TAG, "hist-" + TAG);
            out.put("load", load);
            Bench.progress("prune: loaded " + load.get("messages") + " messages in " + load.get("totalSeconds") + " s");
            Runs without = new Runs("prune/without");
            Runs during = new Runs("prune/during");
            int run = 0;
            for (int i = 0; i < o.warmups + o.runs; i++) {
                without.add(w1(o, db, run++), i < o.warmups, "before " + (i + 1));
            }
            long before = history(db);
            long t0 = System.nanoTime();
            int overlapped = 0;
            List<Map<String, Object>> late = new ArrayList<>();
            double pruneSeconds;
            try (HikariDataSource prunePool = db.pool(3, "coop-prune");
                    CoopEngine pruner = Coop.engine(prunePool).name("pruner").workers(1)
                            .register(Saga.on(Topic.of("prune-idle", Payloads.Job.class), "prune-idle")
                                    .step("never", s -> {
                                    }).build())
                            .retention(Duration.ofHours(1)).start()) {
                while (pruning(db) && overlapped < Math.max(o.runs, 3) * 10) {
                    Map<String, Object> m = w1(o, db, run++);
                    if (pruning(db)) {
                        during.add(m, false, "during " + (++overlapped));
                    } else {
                        late.add(m); // pruning ended before this run did: counts as neither
                    }
                }
                pruneSeconds = (System.nanoTime() - t0) / 1e9;
            }
            long deleted = before - history(db);
            for (int i = 0; i < o.runs; i++) {
                without.add(w1(o, db, run++), false, "after " + (i + 1));
            }
            out.put("pruned", Map.of("messages", deleted, "seconds", Stats.round(pruneSeconds, 1),
                    "finished", !pruning(db)));
            out.put("without", without.toMap());
            out.put("during", during.toMap());
            out.put("runsOverlappingPartly", late.size());
            double ratio = during.measured.isEmpty()
                    ? Double.NaN
                    : median(during) / median(without);
            out.put("duringOverWithout", Stats.round(ratio, 3));
            report.workloads.put("prune", out);
            String w = "prune (" + String.format(java.util.Locale.ROOT, "%,d", o.pruneHierarchies) + " hierarchies)";
            report.row(w, "messages deleted per s", deleted / pruneSeconds, null, null);
            report.row(w, "W1 steps/s without pruning", without, "stepsPerSec", "ratioToPhys", null, null);
            report.row(w, "W1 steps/s while pruning", during, "stepsPerSec", "ratioToPhys", null, null);
            report.row(w, "while pruning / without", ratio, ">= 0.9", ratio >= 0.9);
        }
    }

    private static Map<String, Object> w1(Options o, BenchDb db, int run) {
        try (RunEnv env = RunEnv.on(o, db, TAG + run, false, false)) {
            return Throughput.w1(o, db, env.pool, Double.NaN, o.historySagas, o.historyThreads, TAG + run);
        }
    }

    /** The loaded history's messages left (W1's are younger than an hour). */
    private static long history(BenchDb db) {
        return db.longValue("SELECT count(*) FROM coop.message WHERE created_at < now() - interval '1 hour'");
    }

    /** Whether history older than the age is left (the loaded hierarchies; W1's are younger). */
    private static boolean pruning(BenchDb db) {
        return db.longValue("SELECT count(*) FROM (SELECT 1 FROM coop.run WHERE parent_id IS NULL"
                + " AND finished_at < now() - interval '1 hour' LIMIT 1) x") > 0;
    }

    private static double median(Runs runs) {
        List<Double> v = runs.measured.stream().map(m -> ((Number) m.get("stepsPerSec")).doubleValue()).toList();
        return Stats.median(v);
    }
}
