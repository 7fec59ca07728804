package dev.coop.bench;

import dev.coop.Coop;
import dev.coop.PruneResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What retention costs the engine: {@code --prune-hierarchies} finished hierarchies are loaded (as the history
 * workload writes them, spread over 30 days), then W1 runs before, during and after a client deletes them with
 * {@code client.prune(1 h)} (one transaction per 100 hierarchies, as an engine's retention thread does). W1's own
 * hierarchies are younger than the age, so every W1 run verifies everything it made durable. Reported: W1 during
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
            AtomicReference<Object> pruned = new AtomicReference<>();
            long t0 = System.nanoTime();
            com.zaxxer.hikari.HikariDataSource prunePool = db.pool(2, "coop-prune");
            Thread pruner = Thread.ofPlatform().name("bench-prune").start(() -> {
                try {
                    PruneResult r = Coop.client(prunePool).prune(Duration.ofHours(1));
                    pruned.set(r);
                } catch (RuntimeException e) {
                    pruned.set(e);
                }
            });
            int overlapped = 0;
            List<Map<String, Object>> late = new ArrayList<>();
            while (pruner.isAlive() && overlapped < Math.max(o.runs, 3) * 3) {
                Map<String, Object> m = w1(o, db, run++);
                if (pruner.isAlive()) {
                    during.add(m, false, "during " + (++overlapped));
                } else {
                    late.add(m); // pruning ended before this run did: counts as neither
                }
            }
            pruner.join();
            prunePool.close();
            double pruneSeconds = (System.nanoTime() - t0) / 1e9;
            for (int i = 0; i < o.runs; i++) {
                without.add(w1(o, db, run++), false, "after " + (i + 1));
            }
            if (pruned.get() instanceof RuntimeException e) {
                throw e;
            }
            PruneResult r = (PruneResult) pruned.get();
            out.put("pruned", Map.of("hierarchies", r.hierarchies(), "runs", r.runs(), "events", r.events(),
                    "messages", r.messages(), "seconds", Stats.round(pruneSeconds, 1)));
            out.put("without", without.toMap());
            out.put("during", during.toMap());
            out.put("runsOverlappingPartly", late.size());
            double ratio = during.measured.isEmpty()
                    ? Double.NaN
                    : median(during) / median(without);
            out.put("duringOverWithout", Stats.round(ratio, 3));
            report.workloads.put("prune", out);
            String w = "prune (" + String.format(java.util.Locale.ROOT, "%,d", r.hierarchies()) + " hierarchies)";
            report.row(w, "hierarchies deleted per s", r.hierarchies() / pruneSeconds, null, null);
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

    private static double median(Runs runs) {
        List<Double> v = runs.measured.stream().map(m -> ((Number) m.get("stepsPerSec")).doubleValue()).toList();
        return Stats.median(v);
    }
}
