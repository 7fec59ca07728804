package dev.coop.internal.operate;

import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;
import dev.coop.internal.store.Wakes;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * Actions on many runs at once, in bounded batches: each batch of at most {@link #BATCH} runs is its own transaction,
 * so that 100,000 selected runs never hold one transaction (nor one lock set). Each batch writes the runs' events and
 * one audit entry per hierarchy it touched (who, why, how many of its runs).
 */
public final class BulkActions {
    /** Runs one transaction acts on at most. */
    public static final int BATCH = 1_000;

    private static final String RETRY_PARKED = """
            WITH picked AS (
              SELECT id FROM {schema}.run WHERE status = 'PARKED' AND saga = ?
               ORDER BY created_at LIMIT ? FOR UPDATE SKIP LOCKED
            ), resolved AS (
              UPDATE {schema}.run r SET status = 'RUNNABLE', attempt = 1, resolution = NULL, runnable_at = {now},
                     version = r.version + 1
                FROM picked WHERE r.id = picked.id
              RETURNING r.message_id, r.saga, r.saga_version, r.status, r.runnable_at, r.lineage, r.next_step, r.root_id
            ), {notified}, logged AS (
              INSERT INTO {schema}.event (message_id, type, saga, step, lineage, created_at, root_id)
              SELECT message_id, 'RETRIED', saga, next_step, lineage, {now}, root_id FROM resolved
            ), audited AS ( -- one entry per hierarchy: its root message, no scope
              INSERT INTO {schema}.audit (message_id, lineage, action, actor, reason, outcome)
              SELECT root_id, NULL, 'retry-parked', ?, ?, 'RETRYING ' || count(*) || ' parked run(s) of saga ' || ?
                FROM resolved GROUP BY root_id
            )
            SELECT count(*)::int FROM resolved, notified
            """.replace("{notified}", Wakes.notifying("notified", "resolved", Wakes.NONE_LOCAL));

    /**
     * On Citus, the parked runs of a saga, oldest first, read without a lock (one task per shard): Citus refuses
     * {@link #RETRY_PARKED}'s {@code FOR UPDATE} across shards. Each hierarchy's are then locked and retried by root.
     * Parameters: saga, limit.
     */
    private static final String PARKED_BY_ROOT = """
            SELECT root_id, id FROM {schema}.run WHERE status = 'PARKED' AND saga = ? ORDER BY created_at LIMIT ?
            """;
    /** On Citus, the candidates of one hierarchy no other transaction holds, still parked. Parameters: root, ids. */
    private static final String LOCK_BY_ROOT = """
            SELECT id FROM {schema}.run WHERE root_id = ? AND id = ANY(?::uuid[]) AND status = 'PARKED'
               FOR UPDATE SKIP LOCKED
            """;
    /**
     * {@link #RETRY_PARKED} of one hierarchy's runs locked by {@link #LOCK_BY_ROOT}, named by root. Parameters: ids,
     * {now}, root, {now}, actor, reason, saga.
     */
    static final String RETRY_BY_ROOT = dev.coop.internal.store.CitusLayout.rewritten(RETRY_PARKED, """
            SELECT id FROM {schema}.run WHERE status = 'PARKED' AND saga = ?
               ORDER BY created_at LIMIT ? FOR UPDATE SKIP LOCKED""", "SELECT unnest(?::uuid[]) AS id",
            "FROM picked WHERE r.id = picked.id", "FROM picked WHERE r.root_id = ? AND r.id = picked.id");

    private final SchemaName schema;
    private final Time time;

    public BulkActions(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    /** How many runs of {@code saga} are parked now. */
    public long countParked(Connection c, String saga) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "SELECT count(*) FROM {schema}.run WHERE status = 'PARKED' AND saga = ?"))) {
            ps.setString(1, saga);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /**
     * Retries up to {@link #BATCH} parked runs of {@code saga} (oldest first, skipping runs another transaction holds),
     * in the caller's transaction; returns how many. The caller commits, and calls again until it returns less than
     * {@link #BATCH}.
     */
    public int retryParkedBatch(Connection c, String saga, String actor, String reason) throws SQLException {
        if (schema.citus()) {
            return retryParkedByRoot(c, saga, actor, reason);
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(RETRY_PARKED))) {
            int i = 0;
            ps.setString(++i, saga);
            ps.setInt(++i, BATCH);
            ps.setObject(++i, time.bind());
            return retried(ps, i, saga, actor, reason);
        }
    }

    /**
     * {@link #retryParkedBatch} on Citus: up to {@link #BATCH} parked runs read without a lock, then each hierarchy's
     * locked ({@code SKIP LOCKED}) and retried in statements that name its root. Runs another transaction holds are
     * skipped, as on plain PostgreSQL, but not replaced by later ones: the batch may then retry fewer than
     * {@link #BATCH} while more are parked, and the caller's next call (another transaction) takes them.
     */
    private int retryParkedByRoot(Connection c, String saga, String actor, String reason) throws SQLException {
        int retried = 0;
        for (var root : parkedByRoot(c, saga).entrySet()) {
            retried += retryRoot(c, root.getKey(), root.getValue(), saga, actor, reason);
        }
        return retried;
    }

    /** Up to {@link #BATCH} parked runs of {@code saga}, oldest first, by root ({@link #PARKED_BY_ROOT}). */
    private java.util.Map<java.util.UUID, java.util.List<java.util.UUID>> parkedByRoot(Connection c, String saga)
            throws SQLException {
        java.util.Map<java.util.UUID, java.util.List<java.util.UUID>> byRoot = new java.util.LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(PARKED_BY_ROOT))) {
            ps.setString(1, saga);
            ps.setInt(2, BATCH);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    byRoot.computeIfAbsent(rs.getObject(1, java.util.UUID.class), r -> new java.util.ArrayList<>())
                            .add(rs.getObject(2, java.util.UUID.class));
                }
            }
        }
        return byRoot;
    }

    /** Locks the candidates of one hierarchy ({@link #LOCK_BY_ROOT}) and retries those it got; returns how many. */
    private int retryRoot(Connection c, java.util.UUID root, java.util.List<java.util.UUID> candidates, String saga,
            String actor, String reason) throws SQLException {
        java.util.List<java.util.UUID> locked = new java.util.ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(LOCK_BY_ROOT))) {
            ps.setObject(1, root);
            ps.setArray(2, c.createArrayOf("uuid", candidates.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    locked.add(rs.getObject(1, java.util.UUID.class));
                }
            }
        }
        if (locked.isEmpty()) {
            return 0;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(RETRY_BY_ROOT))) {
            int i = 0;
            ps.setArray(++i, c.createArrayOf("uuid", locked.toArray()));
            ps.setObject(++i, time.bind());
            ps.setObject(++i, root);
            return retried(ps, i, saga, actor, reason);
        }
    }

    /**
     * Binds what {@link #RETRY_PARKED} and {@link #RETRY_BY_ROOT} end with after parameter {@code i} (the events'
     * {@code {now}}, then the audit's actor, reason and saga), runs the statement and returns how many runs it retried.
     */
    private int retried(PreparedStatement ps, int i, String saga, String actor, String reason) throws SQLException {
        ps.setObject(++i, time.bind());
        ps.setString(++i, actor);
        ps.setString(++i, reason);
        ps.setString(++i, saga);
        try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }
}
