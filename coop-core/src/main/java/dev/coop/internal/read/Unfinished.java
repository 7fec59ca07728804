package dev.coop.internal.read;

import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.internal.store.SchemaName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** What is left unfinished: the counts of unfinished runs, and why a hierarchy has not finished. */
public final class Unfinished {
    /** The unfinished runs of a hierarchy by saga, version and status, and whether a running engine has them. */
    private static final String WHY_UNFINISHED = """
            WITH RECURSIVE h AS (
              SELECT id, saga, saga_version, CASE WHEN status = 'RUNNABLE' AND pending_children > 0 THEN 'WAITING'
                                                  ELSE status END AS status
                FROM {schema}.run WHERE message_id = ?
              UNION ALL
              SELECT r.id, r.saga, r.saga_version,
                     CASE WHEN r.status = 'RUNNABLE' AND r.pending_children > 0 THEN 'WAITING' ELSE r.status END
                FROM {schema}.run r JOIN h ON r.parent_id = h.id
            )
            SELECT saga, saga_version, status, count(*)::int AS n,
                   EXISTS (SELECT 1 FROM {schema}.engine e
                            WHERE e.stopped_at IS NULL
                              AND (h.saga || '@' || h.saga_version = ANY(e.versions)
                                   OR (e.versions IS NULL AND h.saga_version = 1 AND h.saga = ANY(e.sagas))))
                     AS served,
                   EXISTS (SELECT 1 FROM {schema}.engine e WHERE e.stopped_at IS NULL AND h.saga = ANY(e.sagas))
                     AS named
              FROM h WHERE status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD')
             GROUP BY saga, saga_version, status ORDER BY saga, saga_version, status
            """;

    /**
     * {@link #WHY_UNFINISHED} on Citus: both parts of the walk name the hierarchy's root (bound), so that Citus plans
     * the recursion (it refuses a recursive CTE without a filter on the distribution column) and routes it to the
     * hierarchy's shard. Parameters: root, message, root.
     */
    static final String WHY_UNFINISHED_BY_ROOT = dev.coop.internal.store.CitusLayout.rewritten(WHY_UNFINISHED,
            "FROM {schema}.run WHERE message_id = ?", "FROM {schema}.run WHERE root_id = ? AND message_id = ?",
            "FROM {schema}.run r JOIN h ON r.parent_id = h.id", "FROM {schema}.run r JOIN h ON r.parent_id = h.id"
                    + " WHERE r.root_id = ?");
    /** The root of a message's hierarchy (Citus: one task per shard, read only when a wait gave up). */
    private static final String ROOT_OF = "SELECT root_id FROM {schema}.message WHERE id = ?";

    private final SchemaName schema;

    public Unfinished(SchemaName schema) {
        this.schema = schema;
    }

    /** How many runs are RUNNABLE, WAITING, PARKED and HELD: a scan of the index of unfinished runs only. */
    public Map<RunStatus, Long> unfinishedRuns(Connection c) throws SQLException {
        Map<RunStatus, Long> counts = new EnumMap<>(RunStatus.class);
        counts.put(RunStatus.RUNNABLE, 0L);
        counts.put(RunStatus.WAITING, 0L);
        counts.put(RunStatus.PARKED, 0L);
        counts.put(RunStatus.HELD, 0L);
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT status, count(*) FROM {schema}.run
                 WHERE status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD') GROUP BY status
                """));
                ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                counts.put(RunStatus.valueOf(rs.getString(1)), rs.getLong(2));
            }
        }
        return counts;
    }

    /**
     * Why a hierarchy has not finished, for a timeout's message: its unfinished runs by saga and status, saying which
     * are parked and which are runnable with no running engine for their saga (engines that stopped cleanly do not
     * count; crashed ones still do). Walks the runs by {@code parent_id}; only used when a wait gives up.
     */
    public String whyUnfinished(Connection c, MessageId message) throws SQLException {
        List<String> parts = new ArrayList<>();
        java.util.UUID root = schema.citus() ? rootOf(c, message) : null;
        if (schema.citus() && root == null) {
            return "nothing left to run";
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(root != null
                ? WHY_UNFINISHED_BY_ROOT
                : WHY_UNFINISHED))) {
            int i = 0;
            if (root != null) {
                ps.setObject(++i, root);
            }
            ps.setObject(++i, message.value());
            if (root != null) {
                ps.setObject(++i, root);
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    parts.add(describe(rs));
                }
            }
        }
        return parts.isEmpty() ? "nothing left to run" : String.join("; ", parts);
    }

    private java.util.UUID rootOf(Connection c, MessageId message) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(ROOT_OF))) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getObject(1, java.util.UUID.class) : null;
            }
        }
    }

    /** One group of unfinished runs (a row of {@link #WHY_UNFINISHED}) and what it waits for. */
    private static String describe(ResultSet rs) throws SQLException {
        String saga = rs.getString("saga");
        int version = rs.getInt("saga_version");
        String status = rs.getString("status");
        int n = rs.getInt("n");
        String runs = n + (n == 1 ? " run" : " runs") + " of saga '" + saga + "'"
                + (version == 1 ? "" : " version " + version);
        if (status.equals("PARKED")) {
            return runs + " parked (an operator must retry or resolve: see parkedRuns)";
        } else if (status.equals("HELD")) {
            return runs + " held (an earlier run of the saga with the same ordering key has not finished)";
        } else if (!rs.getBoolean("served")) {
            return runs + " " + status.toLowerCase(Locale.ROOT)
                    + (version == 1 && !rs.getBoolean("named")
                            ? " with no running engine for that saga"
                            : " with no running engine for version " + version + " of that saga");
        }
        return runs + " " + status.toLowerCase(Locale.ROOT);
    }
}
