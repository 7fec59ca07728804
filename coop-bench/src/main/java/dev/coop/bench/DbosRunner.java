package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.dbos.transact.DBOS;
import dev.dbos.transact.config.DBOSConfig;
import dev.dbos.transact.workflow.Workflow;
import dev.dbos.transact.workflow.WorkflowHandle;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * DBOS Transact (Java, {@code dev.dbos:transact}) running the same workloads as Coop: W1 a workflow of 3 no-op
 * steps; W2 a parent workflow whose first step is followed by 10 child workflows (2 no-op steps each) started and
 * awaited, then a second step; W3 a chain of workflows, each level a no-op step that starts and awaits the next
 * level. Client threads call the workflow through DBOS's proxy and block until it returned (DBOS runs a workflow
 * called this way in the calling thread; children run on DBOS's executor). DBOS gets the same pool size as Coop.
 */
final class DbosRunner {
    /** The workflows; DBOS intercepts calls made through the registered proxy. */
    public interface Flows {
        void w1(int unit);

        void parent(int unit);

        void child(int unit);

        void level(int depth);
    }

    /** Implementations of {@link Flows}, with their no-op steps. */
    public static final class FlowsImpl implements Flows {
        private final DBOS dbos;
        private final int children;
        private Flows self;

        FlowsImpl(DBOS dbos, int children) {
            this.dbos = dbos;
            this.children = children;
        }

        @Override
        @Workflow(name = "w1")
        public void w1(int unit) {
            dbos.runStep(() -> {
            }, "a");
            dbos.runStep(() -> {
            }, "b");
            dbos.runStep(() -> {
            }, "c");
        }

        @Override
        @Workflow(name = "parent")
        public void parent(int unit) {
            dbos.runStep(() -> {
            }, "fan");
            List<WorkflowHandle<Void, RuntimeException>> handles = new ArrayList<>();
            for (int c = 0; c < children; c++) {
                int child = c;
                handles.add(dbos.startWorkflow(() -> self.child(child)));
            }
            for (WorkflowHandle<Void, RuntimeException> h : handles) {
                h.getResult();
            }
            dbos.runStep(() -> {
            }, "join");
        }

        @Override
        @Workflow(name = "child")
        public void child(int unit) {
            dbos.runStep(() -> {
            }, "c1");
            dbos.runStep(() -> {
            }, "c2");
        }

        @Override
        @Workflow(name = "level")
        public void level(int depth) {
            dbos.runStep(() -> {
            }, "descend");
            if (depth > 1) {
                dbos.startWorkflow(() -> self.level(depth - 1)).getResult();
            }
        }
    }

    private DbosRunner() {
    }

    /** Runs {@code workload} (w1, w2 or w3) on a fresh database and verifies what DBOS made durable. */
    static Map<String, Object> run(Options o, String workload, int units, int threads) {
        return run(o, workload, units, threads, false);
    }

    /** As {@link #run(Options, String, int, int)}, with every commit delayed 100 ms when {@code slowCommits}. */
    static Map<String, Object> run(Options o, String workload, int units, int threads, boolean slowCommits) {
        return run(o, workload, units, threads, slowCommits, null);
    }

    /** As above; with a {@code profile}, the measured window is observed on the server ({@link ServerProfile}). */
    static Map<String, Object> run(Options o, String workload, int units, int threads, boolean slowCommits,
            ServerProfile.Mode profile) {
        try (BenchDb db = BenchDb.create("dbos_" + workload, o.keep)) {
            if (slowCommits) {
                db.slowCommits();
            }
            Cpu.locatePostgres(db);
            HikariDataSource pool = db.pool(o.poolSize(), "dbos-" + workload);
            DBOSConfig config = DBOSConfig.defaults("coopbench")
                    .withDataSource(pool)
                    .withDatabaseUrl(db.server.jdbcUrl(db.name))
                    .withDbUser(db.server.user())
                    .withDbPassword(db.server.password())
                    .disableAdminServer();
            Units.Result r;
            Cpu.Snapshot c0;
            Cpu.Snapshot c1;
            ServerProfile server = profile == null ? null : new ServerProfile(o, db, "DBOS Transact", profile);
            try (DBOS dbos = new DBOS(config)) {
                FlowsImpl impl = new FlowsImpl(dbos, o.w2Children);
                Flows flows = dbos.registerProxy(Flows.class, impl);
                impl.self = flows;
                dbos.launch();
                Units.Unit unit = switch (workload) {
                    case "w1" -> flows::w1;
                    case "w2" -> flows::parent;
                    default -> i -> flows.level(o.w3Depth);
                };
                if (server != null) {
                    server.begin();
                }
                c0 = Cpu.take();
                r = Units.run(units, threads, unit);
                c1 = Cpu.take();
                if (server != null) {
                    server.end();
                }
            }
            pool.close();
            Map<String, Object> observed = server == null ? null : server.finish(units, 3L * units);
            Verify.noFailures("DBOS " + workload, r.failures());
            long workflows = switch (workload) {
                case "w1" -> units;
                case "w2" -> (long) units * (1 + o.w2Children);
                default -> (long) units * o.w3Depth;
            };
            long steps = switch (workload) {
                case "w1" -> 3L * units;
                case "w2" -> (long) units * (2 + 2L * o.w2Children);
                default -> (long) units * o.w3Depth;
            };
            Map<String, Long> statuses = db.counts(
                    "SELECT status, count(*) FROM dbos.workflow_status GROUP BY status ORDER BY status");
            long outputs = db.longValue("SELECT count(*) FROM dbos.operation_outputs");
            if (!Map.of("SUCCESS", workflows).equals(statuses) || outputs < steps) {
                throw new IllegalStateException("DBOS " + workload + " made durable " + statuses + " workflows and "
                        + outputs + " step outputs; expected " + workflows + " SUCCESS and at least " + steps);
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("unitsPerSec", Stats.round(r.perSecond(units), 1));
            m.put("stepsPerSec", Stats.round(r.perSecond(steps), 1));
            Throughput.latencies(m, "latency", r.latencies());
            m.put("elapsedSec", Stats.round(r.elapsedNanos() / 1e9, 3));
            m.put("durable", Map.of("workflows", statuses, "operationOutputs", outputs));
            Cpu.perUnit(m, c0, c1, steps, "Step");
            m.put("cpu", Cpu.between(c0, c1));
            ServerTables.put(m, observed);
            return m;
        }
    }
}
