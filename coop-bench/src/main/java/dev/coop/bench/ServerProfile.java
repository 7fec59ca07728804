package dev.coop.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The server's view of one measured run of one system (the side-by-side W1 runs, docs/performance.md "Method"):
 * execution time per statement ({@code pg_stat_statements}, reset for the run's database when the window opens),
 * commits ({@code pg_stat_database.xact_commit}, read once the run's backends exited and flushed their counters) and
 * write transactions (transaction ids assigned), relations locked per backend ({@link LockSampler}), plan size per
 * statement ({@link PlanSizes}) and, with {@code --perf}, the server's CPU by function family ({@link PerfProfile}).
 *
 * <p>Its own queries go through a database of its own ({@code bench_probe_*}, which also holds the extension), so
 * that they add nothing to the measured database's counters.
 */
final class ServerProfile {
    /** What a profiled run records: the statements, commits, locks and plans; or all that and perf's samples. */
    enum Mode {
        STATEMENTS, PERF
    }

    private static BenchDb probe;

    private final Options o;
    private final BenchDb db;
    private final String system;
    private final boolean statements;
    private final Mode mode;
    private long dbOid;
    private long commitsBefore;
    private long xidBefore;
    private long xidAfter;
    private long windowNanos;
    private List<Map<String, Object>> statementRows = List.of();
    private String statementsError;
    private LockSampler locks;
    private PerfProfile perf;

    ServerProfile(Options o, BenchDb db, String system, Mode mode) {
        this.o = o;
        this.mode = mode;
        this.db = db;
        this.system = system;
        this.statements = probe().pgStatStatements();
    }

    /** The probe database, created once per JVM and dropped before the server stops. */
    static synchronized BenchDb probe() {
        if (probe == null) {
            probe = BenchDb.create("probe", false);
            BenchDb p = probe;
            dev.coop.test.CoopPostgres.beforeStopping(p::close);
        }
        return probe;
    }

    /** A connection of its own to the probe database (the lock sampler's). */
    static Connection probeConnection() throws SQLException {
        BenchDb p = probe();
        Properties props = new Properties();
        props.setProperty("user", p.server.user());
        props.setProperty("password", p.server.password());
        props.setProperty("ApplicationName", "coop-bench-probe");
        Connection c = DriverManager.getConnection(p.server.jdbcUrl(p.name), props);
        c.setAutoCommit(true);
        return c;
    }

    /** Opens the window: right before the first launch. */
    void begin() {
        BenchDb p = probe();
        dbOid = p.longValue("SELECT oid::bigint FROM pg_database WHERE datname = ?", db.name);
        commitsBefore = commits();
        if (statements) {
            p.value("SELECT pg_stat_statements_reset(dbid => ?::oid)::text", dbOid);
        }
        xidBefore = p.longValue("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint");
        locks = LockSampler.start(dbOid, o.lockSampleMs);
        perf = mode == Mode.PERF ? PerfProfile.start() : null;
        windowNanos = System.nanoTime();
    }

    /** Closes the window: right after the last saga finished, before the engine stops. */
    void end() {
        windowNanos = System.nanoTime() - windowNanos;
        if (perf != null) {
            perf.stop();
        }
        locks.stop();
        BenchDb p = probe();
        xidAfter = p.longValue("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint");
        if (statements) {
            try {
                statementRows = p.rows("""
                        SELECT queryid::text AS queryid, calls, rows, plans, total_exec_time, total_plan_time, query
                          FROM pg_stat_statements
                         WHERE dbid = ?::oid AND toplevel""", dbOid);
            } catch (RuntimeException e) { // before PostgreSQL 14: no toplevel, no plans
                statementsError = "pg_stat_statements could not be read: " + e.getMessage();
            }
        }
    }

    /**
     * After the system's engine and pool closed: waits for the database's backends to exit (they flush their
     * counters then), and returns everything per saga of {@code sagas} (each of {@code steps} steps in all).
     */
    Map<String, Object> finish(long sagas, long steps) {
        awaitBackendsGone();
        long commits = commits() - commitsBefore;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("system", system);
        m.put("sagas", sagas);
        m.put("windowSec", Stats.round(windowNanos / 1e9, 3));
        m.put("commitsPerSaga", Stats.round(commits / (double) sagas, 3));
        m.put("writeTransactionsPerSaga", Stats.round((xidAfter - xidBefore) / (double) sagas, 3));
        if (statements && statementsError == null) {
            statementsPerSaga(m, sagas);
        } else {
            m.put("statementsSkipped", statements
                    ? statementsError
                    : "pg_stat_statements is not preloaded by this server");
        }
        m.put("locks", locks.summary(db));
        if (perf != null) {
            m.put("perf", perf.fold(steps));
        }
        return m;
    }

    /** The statements of one kind (one label): pg_stat_statements' rows summed. */
    private static final class Kind {
        final String label;
        final boolean utility;
        double calls;
        double execMs;
        double planMs;
        double plans;
        final List<String> queries = new ArrayList<>();

        Kind(String label, boolean utility) {
            this.label = label;
            this.utility = utility;
        }

        /** Its figures per saga, and its plan's size. */
        Map<String, Object> perSaga(long sagas, PlanSizes sizes) {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("label", label);
            d.put("utility", utility);
            d.put("callsPerSaga", Stats.round(calls / sagas, 3));
            d.put("meanExecUs", Stats.round(calls == 0 ? 0 : execMs * 1000 / calls, 1));
            d.put("execUsPerSaga", Stats.round(execMs * 1000 / sagas, 1));
            d.put("planUsPerSaga", Stats.round(planMs * 1000 / sagas, 1));
            d.put("plansPerCall", Stats.round(calls == 0 ? 0 : plans / calls, 3));
            if (!utility) {
                d.put("plan", sizes.of(queries.getFirst()));
            }
            d.put("queries", queries); // each text of this kind (pg_stat_statements' queryids), in full
            return d;
        }
    }

    private void statementsPerSaga(Map<String, Object> m, long sagas) {
        Map<String, Kind> byLabel = new LinkedHashMap<>();
        for (Map<String, Object> row : statementRows) {
            String query = (String) row.get("query");
            Kind k = byLabel.computeIfAbsent(StatementLabels.label(query),
                    l -> new Kind(l, StatementLabels.utility(query)));
            k.calls += num(row.get("calls"));
            k.execMs += num(row.get("total_exec_time"));
            k.planMs += num(row.get("total_plan_time"));
            k.plans += num(row.get("plans"));
            k.queries.add(query);
        }
        List<Kind> statements = byLabel.values().stream().filter(k -> !k.utility).toList();
        m.put("statementsPerSaga", Stats.round(statements.stream().mapToDouble(k -> k.calls).sum() / sagas, 3));
        m.put("execUsPerSaga", Stats.round(statements.stream().mapToDouble(k -> k.execMs).sum() * 1000 / sagas, 1));
        m.put("planUsPerSaga", Stats.round(statements.stream().mapToDouble(k -> k.planMs).sum() * 1000 / sagas, 1));
        m.put("utilityExecUsPerSaga", Stats.round(byLabel.values().stream().filter(k -> k.utility)
                .mapToDouble(k -> k.execMs).sum() * 1000 / sagas, 1));
        List<Map<String, Object>> detail = new ArrayList<>();
        try (PlanSizes sizes = new PlanSizes(db)) {
            for (Kind k : byLabel.values()) {
                detail.add(k.perSaga(sagas, sizes));
            }
        }
        detail.sort((a, b) -> Double.compare(num(b.get("execUsPerSaga")), num(a.get("execUsPerSaga"))));
        m.put("statements", detail);
    }

    private long commits() {
        return probe().longValue("SELECT xact_commit FROM pg_stat_database WHERE datid = ?::oid", dbOid);
    }

    /** Waits (up to 10 s) until no backend but the benchmark's admin connection is left in the run's database. */
    private void awaitBackendsGone() {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (System.nanoTime() < deadline) {
            long n = probe().longValue("SELECT count(*) FROM pg_stat_activity WHERE datid = ?::oid"
                    + " AND application_name <> 'coop-bench-admin'", dbOid);
            if (n == 0) {
                return;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    static double num(Object o) {
        return o instanceof Number n ? n.doubleValue() : Double.NaN;
    }
}
