package dev.coop.internal.read;

import dev.coop.RunStatus;
import dev.coop.inspect.RunOrdering;
import dev.coop.internal.store.SchemaName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Which run each HELD run of a tree waits for: the unfinished run of its saga and ordering key, which may be of
 * another hierarchy. One statement, only when the tree has held runs, after its rows are read: a key's runs are on
 * any shard on Citus, so the tree's statements (bound to its root) cannot read it.
 */
final class HeldRuns {
    private HeldRuns() {
    }

    /** {@code rows}, each HELD run with the run it is held behind (index {@code run_key}). */
    static List<TreeRow> attach(Connection c, SchemaName schema, List<TreeRow> rows) throws SQLException {
        List<TreeRow> held = rows.stream()
                .filter(r -> r.status() == RunStatus.HELD && r.ordering().orderingKey() != null).toList();
        if (held.isEmpty()) {
            return rows;
        }
        Map<String, UUID> running = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT a.saga, a.ordering_key, a.id FROM {schema}.run a
                 WHERE a.saga = ANY(?) AND a.ordering_key = ANY(?) AND a.status IN ('RUNNABLE', 'WAITING', 'PARKED')
                """))) {
            ps.setArray(1, c.createArrayOf("text", held.stream().map(TreeRow::saga).distinct().toArray()));
            ps.setArray(2, c.createArrayOf("text",
                    held.stream().map(r -> r.ordering().orderingKey()).distinct().toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    running.putIfAbsent(key(rs.getString(1), rs.getString(2)), rs.getObject(3, UUID.class));
                }
            }
        }
        List<TreeRow> attached = new ArrayList<>(rows.size());
        for (TreeRow r : rows) {
            UUID behind = r.status() == RunStatus.HELD && r.ordering().orderingKey() != null
                    ? running.get(key(r.saga(), r.ordering().orderingKey()))
                    : null;
            attached.add(behind == null
                    ? r
                    : new TreeRow(r.id(), r.message(), r.topic(), r.saga(), r.lineage(),
                            r.parent(), r.status(), r.rollingBack(), r.created(), r.started(), r.finished(),
                            r.failure(),
                            r.sagaVersion(),
                            new RunOrdering(r.ordering().priority(), r.ordering().orderingKey(), behind)));
        }
        return attached;
    }

    private static String key(String saga, String orderingKey) {
        return saga + '\n' + orderingKey;
    }
}
