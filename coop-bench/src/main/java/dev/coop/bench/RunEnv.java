package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Coop;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One run's surroundings: a database (fresh unless shared), the physical limit measured in it just before the run
 * with the run's connection count, Coop's schema, and a warmed pool of workers + 2 connections for the engine.
 */
final class RunEnv implements AutoCloseable {
    final BenchDb db;
    final HikariDataSource pool;
    final double physTxPerSec;
    private final boolean ownsDb;
    private final Options options;
    private final String name;

    private RunEnv(Options options, String name, BenchDb db, HikariDataSource pool, double physTxPerSec,
            boolean ownsDb) {
        this.options = options;
        this.name = name;
        this.db = db;
        this.pool = pool;
        this.physTxPerSec = physTxPerSec;
        this.ownsDb = ownsDb;
    }

    /** A fresh database. */
    static RunEnv fresh(Options o, String name, boolean reference) {
        BenchDb db = BenchDb.create(name, o.keep);
        try {
            return on(o, db, name, reference, true);
        } catch (RuntimeException e) {
            db.close();
            throw e;
        }
    }

    /** A run on an existing database (history: the loaded database is reused by every run). */
    static RunEnv on(Options o, BenchDb db, String name, boolean reference, boolean ownsDb) {
        Cpu.locatePostgres(db);
        double phys = reference ? reference(o, db, name) : Double.NaN;
        migrate(db);
        HikariDataSource pool = db.pool(o.poolSize(), "coop-" + name);
        return new RunEnv(o, name, db, pool, phys, ownsDb);
    }

    /** The physical limit in this database with the engine's connection count, on a pool of its own. */
    static double reference(Options o, BenchDb db, String name) {
        PhysicalLimit.setup(db);
        HikariDataSource ref = db.server.dataSource(db.name, o.poolSize(), "ref-" + name);
        try {
            PhysicalLimit.run(ref, o.poolSize(), Math.max(200, o.physTx / 5));
            return PhysicalLimit.run(ref, o.poolSize(), o.physTx);
        } finally {
            ref.close();
            awaitBackendsGone(db, "ref-" + name);
        }
    }

    /**
     * Measures the physical limit again right after the run and rescales the run's ratios to the mean of the
     * measurements before and after it, so that drift on a shared machine during the run is bracketed.
     */
    Map<String, Object> bracket(Map<String, Object> m) {
        if (Double.isNaN(physTxPerSec)) {
            return m;
        }
        double after = reference(options, db, name + "_after");
        double mean = (physTxPerSec + after) / 2;
        for (Map.Entry<String, Object> e : m.entrySet()) {
            String k = e.getKey();
            if ((k.startsWith("ratio") || k.endsWith("RatioToPhys")) && e.getValue() instanceof Number n) {
                e.setValue(Stats.round(n.doubleValue() * physTxPerSec / mean, 3));
            }
        }
        m.put("physTxPerSec", Stats.round(mean, 1));
        m.put("physTxPerSecBefore", Stats.round(physTxPerSec, 1));
        m.put("physTxPerSecAfter", Stats.round(after, 1));
        return m;
    }

    /** Creates Coop's schema (as an engine or client would at start), then applies the A/B schema variant. */
    static void migrate(BenchDb db) {
        try (HikariDataSource m = db.server.dataSource(db.name, 1, "bench-migrate")) {
            Coop.client(m);
        }
        SchemaVariant.apply(db);
    }

    /** Waits until the server has no backend left for a pool (they flush their statistics when they exit). */
    static void awaitBackendsGone(BenchDb db, String applicationName) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (System.nanoTime() < deadline) {
            long n = db.longValue("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    + " AND application_name = ?", applicationName);
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

    /** Database-side counters, for per-step costs. Read after the measured pool was closed (stats flushed). */
    static Map<String, Object> dbCounters(BenchDb db) {
        // one statement (one transaction) so that reading the counters barely moves them
        Map<String, Object> m = new LinkedHashMap<>();
        Map<String, Object> row = db.rows("""
                SELECT d.xact_commit, d.xact_rollback, d.tup_inserted, d.tup_updated, d.tup_deleted, d.tup_returned,
                       d.tup_fetched, d.blks_hit, d.blks_read, pg_current_wal_lsn()::text AS wal_lsn,
                       (SELECT coalesce(json_agg(t), '[]'::json)::text FROM (
                          SELECT relname, seq_scan, coalesce(idx_scan, 0) AS idx_scan, n_tup_ins, n_tup_upd,
                                 n_tup_hot_upd, n_tup_del,
                                 (SELECT count(*) FROM pg_index i WHERE i.indrelid = relid) AS indexes
                            FROM pg_stat_user_tables WHERE schemaname = 'coop' ORDER BY relname) t) AS tables
                  FROM pg_stat_database d WHERE d.datname = current_database()""").getFirst();
        String tables = (String) row.remove("tables");
        m.put("walLsn", row.remove("wal_lsn"));
        m.putAll(row);
        try {
            var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
            for (var t : mapper.readTree(tables)) {
                String rel = t.get("relname").asText();
                t.fields().forEachRemaining(f -> {
                    if (!f.getKey().equals("relname")) {
                        m.put(rel + "." + f.getKey(), f.getValue().asLong());
                    }
                });
            }
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
        return m;
    }

    /** after - before for every counter; WAL as bytes. */
    static Map<String, Object> delta(BenchDb db, Map<String, Object> before, Map<String, Object> after) {
        Map<String, Object> d = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : after.entrySet()) {
            if (e.getKey().equals("walLsn")) {
                d.put("walBytes", db.longValue("SELECT pg_wal_lsn_diff(?::pg_lsn, ?::pg_lsn)::bigint",
                        e.getValue(), before.get("walLsn")));
            } else if (e.getValue() instanceof Number n) {
                Object b = before.get(e.getKey());
                d.put(e.getKey(), n.longValue() - (b instanceof Number bn ? bn.longValue() : 0));
            }
        }
        return d;
    }

    static final List<String> SETTINGS = List.of("server_version", "fsync", "synchronous_commit", "full_page_writes",
            "wal_level", "shared_buffers", "work_mem", "maintenance_work_mem", "max_connections", "max_wal_size",
            "checkpoint_timeout", "autovacuum", "jit", "shared_preload_libraries", "track_io_timing");

    static Map<String, Object> settings(BenchDb db) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (String s : SETTINGS) {
            try {
                m.put(s, db.value("SHOW " + s));
            } catch (RuntimeException e) {
                m.put(s, "n/a");
            }
        }
        return m;
    }

    @Override
    public void close() {
        pool.close();
        if (ownsDb) {
            db.close();
        }
    }
}
