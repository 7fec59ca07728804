package dev.coop.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Samples {@code pg_locks} of one database's backends while a run goes on: at each sample, every backend holding a
 * relation lock (a table or an index; it holds them until its transaction ends) counts once, with how many
 * relations it holds and whether any of them is outside the backend's 16 fast-path slots (PostgreSQL 15-17), which
 * goes through the shared lock table. The sampler's own connection is in another database, so it is never counted.
 */
final class LockSampler {
    private final long dbOid;
    private final int intervalMs;
    private final Thread thread;
    private volatile boolean stopped;
    private final List<Integer> held = new ArrayList<>();
    private final Map<Long, Integer> relationSamples = new HashMap<>();
    private int queries;
    private int withNonFastpath;
    private String error;

    private LockSampler(long dbOid, int intervalMs) {
        this.dbOid = dbOid;
        this.intervalMs = intervalMs;
        this.thread = new Thread(this::loop, "bench-lock-sampler");
        this.thread.setDaemon(true);
    }

    static LockSampler start(long dbOid, int intervalMs) {
        LockSampler s = new LockSampler(dbOid, intervalMs);
        s.thread.start();
        return s;
    }

    void stop() {
        stopped = true;
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void loop() {
        try (Connection c = ServerProfile.probeConnection();
                PreparedStatement ps = c.prepareStatement("""
                        SELECT pid, relation::bigint, fastpath FROM pg_locks
                         WHERE locktype = 'relation' AND granted AND database = ?::oid""")) {
            ps.setLong(1, dbOid);
            while (!stopped) {
                sample(ps);
                Thread.sleep(intervalMs);
            }
        } catch (SQLException e) {
            error = e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void sample(PreparedStatement ps) throws SQLException {
        Map<Integer, int[]> byPid = new HashMap<>(); // pid -> {relations, non-fastpath}
        List<Long> relations = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                int[] n = byPid.computeIfAbsent(rs.getInt(1), p -> new int[2]);
                n[0]++;
                if (!rs.getBoolean(3)) {
                    n[1]++;
                }
                relations.add(rs.getLong(2));
            }
        }
        synchronized (this) {
            queries++;
            for (int[] n : byPid.values()) {
                held.add(n[0]);
                if (n[1] > 0) {
                    withNonFastpath++;
                }
            }
            for (long r : relations) {
                relationSamples.merge(r, 1, Integer::sum);
            }
        }
    }

    /** Relations held per backend sample (max, median, p90), the share beyond the fast path, the top relations. */
    synchronized Map<String, Object> summary(BenchDb db) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("intervalMs", intervalMs);
        m.put("samples", queries);
        m.put("backendSamples", held.size());
        if (error != null) {
            m.put("error", error);
        }
        long[] s = held.stream().mapToLong(Integer::longValue).sorted().toArray();
        m.put("relationsMax", s.length == 0 ? 0 : s[s.length - 1]);
        m.put("relationsMedian", Stats.percentile(s, 50));
        m.put("relationsP90", Stats.percentile(s, 90));
        m.put("backendSamplesWithNonFastpath", withNonFastpath);
        m.put("nonFastpathShare", held.isEmpty() ? 0 : Stats.round(withNonFastpath / (double) held.size(), 3));
        List<Map.Entry<Long, Integer>> top = new ArrayList<>(relationSamples.entrySet());
        top.sort((a, b) -> b.getValue() - a.getValue());
        List<Map<String, Object>> rels = new ArrayList<>();
        for (Map.Entry<Long, Integer> e : top.subList(0, Math.min(30, top.size()))) {
            Map<String, Object> r = new LinkedHashMap<>();
            Object name = db.value("SELECT coalesce((SELECT relname::text FROM pg_class WHERE oid = ?::oid), ?)",
                    e.getKey(), "oid " + e.getKey());
            r.put("relation", name);
            r.put("shareOfBackendSamples", Stats.round(e.getValue() / (double) Math.max(1, held.size()), 3));
            rels.add(r);
        }
        m.put("relations", rels);
        return m;
    }
}
