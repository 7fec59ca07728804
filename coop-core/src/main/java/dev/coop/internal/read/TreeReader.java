package dev.coop.internal.read;

import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.inspect.CollapsedRuns;
import dev.coop.inspect.Event;
import dev.coop.inspect.RunOrdering;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Reads the runs of a tree and their events: a small tree in a small hierarchy whole, a larger one level by level
 * within bounds (large fan-outs counted, not listed), and its events by the messages of the runs loaded. Once the
 * tree's root is known, every statement binds it ({@code root_id = ?}) in each of its hot tables' filters: on Citus
 * each goes to the hierarchy's shard alone (docs/guide/citus.md, "The reads"); on PostgreSQL it is one more filter
 * after the same index (the events by message bind it on Citus only: there it could bring in {@code event_root}).
 */
final class TreeReader {
    private static final String ROW = """
            SELECT r.id, r.message_id, m.topic, r.saga, r.lineage, r.parent_id, %s, r.phase = 'ROLLBACK',
                   r.created_at, r.started_at, r.finished_at, r.failure::text, r.saga_version, r.priority,
                   r.ordering_key
            """.formatted(Inspection.shownStatus("r"));

    private final SchemaName schema;

    TreeReader(SchemaName schema) {
        this.schema = schema;
    }

    /**
     * The runs below {@code anchor} and their events. A small tree in a small hierarchy is read whole, as it
     * always was; otherwise level by level ({@link #walk}) and the events only of the runs loaded, by message.
     */
    LoadedTree load(Connection c, String anchor, UUID value, UUID[] scope) throws SQLException {
        UUID root = scope[0];
        if (treeSize(c, anchor, value, root) <= Inspection.SMALL_TREE) {
            List<TreeRow> rows = HeldRuns.attach(c, schema, recursiveRows(c, anchor, value, root));
            boolean smallLog = logSize(c, root) <= Inspection.SMALL_LOG;
            return new LoadedTree(rows, Map.of(), Map.of(), smallLog ? events(c, scope) : eventsOf(c, rows, scope),
                    CompensatingSteps.of(c, schema, rows));
        }
        Map<UUID, List<CollapsedRuns>> collapsed = new HashMap<>();
        List<TreeRow> rows = HeldRuns.attach(c, schema,
                walk(c, rows(c, anchor, value, root), root, collapsed));
        return new LoadedTree(rows, collapsed, launchedBySeq(c, collapsed.keySet(), root),
                eventsOf(c, rows, scope), CompensatingSteps.of(c, schema, rows));
    }

    /** How many runs the tree has, counting no further than one past {@link Inspection#SMALL_TREE}. */
    private int treeSize(Connection c, String anchor, UUID value, UUID root) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH RECURSIVE tree AS (
                  SELECT r.id FROM {schema}.run r WHERE %s AND r.root_id = ?
                  UNION ALL
                  SELECT k.id FROM {schema}.run k JOIN tree t ON k.parent_id = t.id WHERE k.root_id = ?
                )
                SELECT count(*) FROM (SELECT 1 FROM tree LIMIT ?) x
                """.formatted(anchor)))) {
            ps.setObject(1, value);
            ps.setObject(2, root);
            ps.setObject(3, root);
            ps.setInt(4, Inspection.SMALL_TREE + 1);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** How many events the hierarchy of root message {@code root} has, counting no further than past the limit. */
    private int logSize(Connection c, UUID root) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT count(*) FROM (SELECT 1 FROM {schema}.event WHERE root_id = ? LIMIT ?) x
                """))) {
            ps.setObject(1, root);
            ps.setInt(2, Inspection.SMALL_LOG + 1);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /**
     * Loads the tree level by level, a few statements per level: the children of a parent with at most
     * {@link Inspection#COLLAPSE_OVER} of them are loaded; a larger fan-out is counted per saga and status, and only its
     * children that did not commit are loaded (at most {@link Inspection#LISTED_MAX} per parent). At most
     * {@link Inspection#MAX_LOADED} runs are loaded in all; parents past that are counted only.
     */
    private List<TreeRow> walk(Connection c, List<TreeRow> anchors, UUID root,
            Map<UUID, List<CollapsedRuns>> collapsed) throws SQLException {
        List<TreeRow> all = new ArrayList<>(anchors);
        List<UUID> level = anchors.stream().map(TreeRow::id).toList();
        while (!level.isEmpty()) {
            List<TreeRow> next = nextLevel(c, level, root, Inspection.MAX_LOADED - all.size(), collapsed);
            all.addAll(next);
            level = next.stream().map(TreeRow::id).toList();
        }
        all.sort(Comparator.comparing(TreeRow::created).thenComparing(TreeRow::id));
        return all;
    }

    /**
     * The runs loaded of the level below {@code level}, at most {@code budget}: the children of the parents with a
     * small fan-out, and those that did not commit of the others, which go to {@code collapsed} with their counts.
     */
    private List<TreeRow> nextLevel(Connection c, List<UUID> level, UUID root, long budget,
            Map<UUID, List<CollapsedRuns>> collapsed) throws SQLException {
        Map<UUID, List<CollapsedRuns>> groups = childGroups(c, level, root);
        List<UUID> small = new ArrayList<>();
        List<UUID> large = new ArrayList<>();
        for (UUID parent : level) {
            List<CollapsedRuns> g = groups.get(parent);
            long n = g == null ? 0 : g.stream().mapToLong(CollapsedRuns::total).sum();
            if (n == 0) {
                continue;
            }
            if (n <= Inspection.COLLAPSE_OVER && n <= budget) {
                small.add(parent);
                budget -= n;
            } else {
                large.add(parent);
                collapsed.put(parent, g);
            }
        }
        List<TreeRow> next = new ArrayList<>();
        if (!small.isEmpty()) {
            next.addAll(rows(c, "r.parent_id = ANY(?)", small.toArray(UUID[]::new), root));
        }
        int listed = large.isEmpty() ? 0 : (int) Math.min(Inspection.LISTED_MAX, budget / large.size());
        if (listed > 0) {
            next.addAll(notCommitted(c, large, root, listed));
        }
        return next;
    }

    /** The children of each parent, counted per saga and status. */
    private Map<UUID, List<CollapsedRuns>> childGroups(Connection c, List<UUID> parents, UUID root)
            throws SQLException {
        Map<UUID, Map<String, Map<RunStatus, Long>>> counts = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT r.parent_id, r.saga, %s AS shown, count(*) FROM {schema}.run r
                 WHERE r.root_id = ? AND r.parent_id = ANY(?)
                 GROUP BY r.parent_id, r.saga, shown ORDER BY r.parent_id, r.saga, shown
                """.formatted(Inspection.shownStatus("r"))))) {
            ps.setObject(1, root);
            ps.setArray(2, c.createArrayOf("uuid", parents.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.computeIfAbsent(rs.getObject(1, UUID.class), k -> new LinkedHashMap<>())
                            .computeIfAbsent(rs.getString(2), k -> new EnumMap<>(RunStatus.class))
                            .put(RunStatus.valueOf(rs.getString(3)), rs.getLong(4));
                }
            }
        }
        Map<UUID, List<CollapsedRuns>> groups = new HashMap<>();
        counts.forEach((parent, bySaga) -> groups.put(parent, bySaga.entrySet().stream()
                .map(e -> new CollapsedRuns(e.getKey(), e.getValue().values().stream().mapToLong(Long::longValue)
                        .sum(), e.getValue()))
                .toList()));
        return groups;
    }

    /**
     * For each collapsed parent: per step instance ({@code parent_seq}), how many distinct messages its children
     * handle, so that its steps can say how many they launched without listing them.
     */
    private Map<UUID, Map<Integer, Integer>> launchedBySeq(Connection c, Set<UUID> parents, UUID root)
            throws SQLException {
        Map<UUID, Map<Integer, Integer>> counts = new HashMap<>();
        if (parents.isEmpty()) {
            return counts;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT parent_id, parent_seq, count(DISTINCT message_id) FROM {schema}.run
                 WHERE root_id = ? AND parent_id = ANY(?) AND parent_seq IS NOT NULL GROUP BY parent_id, parent_seq
                """))) {
            ps.setObject(1, root);
            ps.setArray(2, c.createArrayOf("uuid", parents.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.computeIfAbsent(rs.getObject(1, UUID.class), k -> new HashMap<>())
                            .put(rs.getInt(2), rs.getInt(3));
                }
            }
        }
        return counts;
    }

    /** Up to {@code limit} children of each parent that did not commit, oldest first. */
    private List<TreeRow> notCommitted(Connection c, List<UUID> parents, UUID root, int limit)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(ROW + """
                  FROM unnest(?::uuid[]) p(id)
                  CROSS JOIN LATERAL (SELECT * FROM {schema}.run k
                                       WHERE k.root_id = ? AND k.parent_id = p.id AND k.status <> 'COMMITTED'
                                       ORDER BY k.created_at, k.id LIMIT ?) r
                  JOIN {schema}.message m ON m.root_id = r.root_id AND m.id = r.message_id
                 WHERE m.root_id = ?
                """))) {
            ps.setArray(1, c.createArrayOf("uuid", parents.toArray()));
            ps.setObject(2, root);
            ps.setInt(3, limit);
            ps.setObject(4, root);
            return readRows(ps);
        }
    }

    /**
     * The runs matching one fixed condition on {@code r} (one bound value), oldest first; only of hierarchy
     * {@code root} unless it is null (a run named by its id alone: on Citus, one task per shard).
     */
    List<TreeRow> rows(Connection c, String where, Object value, UUID root) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(ROW + """
                  FROM {schema}.run r JOIN {schema}.message m ON m.root_id = r.root_id AND m.id = r.message_id
                 WHERE %s%s
                 ORDER BY r.created_at, r.id
                """.formatted(where, root == null ? "" : " AND r.root_id = ? AND m.root_id = ?")))) {
            ps.setObject(1, value instanceof UUID[] ids ? c.createArrayOf("uuid", ids) : value);
            if (root != null) {
                ps.setObject(2, root);
                ps.setObject(3, root);
            }
            return readRows(ps);
        }
    }

    private List<TreeRow> recursiveRows(Connection c, String anchor, UUID value, UUID root) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH RECURSIVE tree AS (
                  SELECT r.* FROM {schema}.run r WHERE %s AND r.root_id = ?
                  UNION ALL
                  SELECT k.* FROM {schema}.run k JOIN tree t ON k.parent_id = t.id WHERE k.root_id = ?
                )
                """.formatted(anchor) + ROW + """
                  FROM tree r JOIN {schema}.message m ON m.root_id = r.root_id AND m.id = r.message_id
                 WHERE m.root_id = ?
                 ORDER BY r.created_at, r.id
                """))) {
            ps.setObject(1, value);
            ps.setObject(2, root);
            ps.setObject(3, root);
            ps.setObject(4, root);
            return readRows(ps);
        }
    }

    private static List<TreeRow> readRows(PreparedStatement ps) throws SQLException {
        List<TreeRow> rows = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                rows.add(new TreeRow(rs.getObject(1, UUID.class), new MessageId(rs.getObject(2, UUID.class)),
                        rs.getString(3), rs.getString(4), (UUID[]) rs.getArray(5).getArray(),
                        rs.getObject(6, UUID.class), RunStatus.valueOf(rs.getString(7)), rs.getBoolean(8),
                        rs.getObject(9, OffsetDateTime.class), rs.getObject(10, OffsetDateTime.class),
                        rs.getObject(11, OffsetDateTime.class), rs.getString(12), rs.getInt(13),
                        new RunOrdering(rs.getInt(14), rs.getString(15), null)));
            }
        }
        return rows;
    }

    /** Every event at or below {@code scope}, in log order. */
    private List<Event> events(Connection c, UUID[] scope) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT id, message_id, type, saga, engine, step, lineage, created_at, started_at,
                       exception::text AS exception, context::text AS context, attempt
                  FROM {schema}.event
                 WHERE root_id = ? AND lineage[1:cardinality(?::uuid[])] = ?::uuid[]
                 ORDER BY id
                """))) {
            var array = c.createArrayOf("uuid", scope);
            ps.setObject(1, scope[0]);
            ps.setArray(2, array);
            ps.setArray(3, array);
            return Store.readEvents(ps);
        }
    }

    /**
     * The events of the messages the loaded runs handle, at or below {@code scope}, in log order: each run's own
     * events, and the EMITTED (and ROLLBACK_EMITTED) events of its message, which belong to the step that launched it.
     * Through the message index: nothing else of the hierarchy is read.
     */
    private List<Event> eventsOf(Connection c, List<TreeRow> rows, UUID[] scope) throws SQLException {
        UUID[] messages = rows.stream().map(r -> r.message().value()).distinct().toArray(UUID[]::new);
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT id, message_id, type, saga, engine, step, lineage, created_at, started_at,
                       exception::text AS exception, context::text AS context, attempt
                  FROM {schema}.event
                 WHERE %s message_id = ANY(?) AND lineage[1:cardinality(?::uuid[])] = ?::uuid[]
                 ORDER BY id
                """.formatted(schema.citus() ? "root_id = ? AND" : "")))) {
            var array = c.createArrayOf("uuid", scope);
            int at = 1;
            if (schema.citus()) { // one shard; plain PostgreSQL could AND in event_root, which is large here
                ps.setObject(at++, scope[0]);
            }
            ps.setArray(at++, c.createArrayOf("uuid", messages));
            ps.setArray(at++, array);
            ps.setArray(at, array);
            return Store.readEvents(ps);
        }
    }
}
