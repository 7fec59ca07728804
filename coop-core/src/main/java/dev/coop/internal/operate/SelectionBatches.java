package dev.coop.internal.operate;

import dev.coop.internal.read.RunListing;
import dev.coop.internal.store.Counts;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;
import dev.coop.internal.store.Wakes;

import dev.coop.failure.CancellationRequestedException;
import dev.coop.failure.Failure;
import dev.coop.failure.RollbackRequestedException;
import dev.coop.inspect.RunQuery;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Cancelling or rolling back the runs a {@link RunQuery} selects, in batches of at most {@link BulkActions#BATCH}
 * runs, each batch one transaction (the caller's): the selection is walked in run id order (a keyset: each batch
 * starts after the last id of the previous one), so runs already acted on are not picked again and a run launched
 * meanwhile is picked only if its id sorts after the walk's position. Each batch first takes the operator locks of its
 * hierarchies (in root order, the lock single cancels and rollbacks take), then acts on every run in one statement:
 * the same requests as {@link Operations#cancel} and {@link Operations#rollback} for a run's scope, one event per run,
 * and one audit entry per hierarchy (who, why, how many of its runs).
 */
public final class SelectionBatches {
    /** A batch's outcome: how many runs it looked at (fewer than a batch: the last), acted on, and where it ended. */
    public record Batch(int picked, int acted, UUID last) {
    }

    /** The selected runs of a batch: unfinished (cancel) or committed (rollback), after a run id, in id order. */
    private static final String PICK = """
            SELECT r.id, r.root_id FROM {schema}.run r JOIN {schema}.message m ON m.id = r.message_id
             WHERE %s AND r.id > ? ORDER BY r.id LIMIT ?
            """;
    /**
     * {@link #PICK} on Citus: the message joined by root as well, so that the join is on the distribution column
     * (Citus refuses the join by message id alone); one task per shard. A run's message is in its hierarchy.
     */
    private static final String PICK_BY_ROOT = dev.coop.internal.store.CitusLayout.rewritten(PICK,
            "ON m.id = r.message_id", "ON m.root_id = r.root_id AND m.id = r.message_id");
    private static final String LOCK = """
            SELECT pg_advisory_xact_lock(?, hashtext(root::text)) FROM unnest(?::uuid[]) root ORDER BY root
            """;
    /** Every picked run still unfinished on the happy path: the scope's cancellation, woken like a single cancel. */
    private static final String CANCEL = """
            WITH picked AS (
              SELECT id, message_id, lineage, root_id FROM {schema}.run
               WHERE id = ANY(?::uuid[]) AND phase = 'HAPPY' AND status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD')
            ), requested AS (
              INSERT INTO {schema}.cancellation (scope_id, lineage, failure, root_id)
              SELECT id, lineage, ?::jsonb, root_id FROM picked
              ON CONFLICT (scope_id) DO NOTHING
              RETURNING scope_id, lineage, root_id
            ), logged AS (
              INSERT INTO {schema}.event (message_id, type, lineage, exception, root_id)
              SELECT p.message_id, 'CANCELLATION_REQUESTED', p.lineage, ?::jsonb, p.root_id
                FROM requested q JOIN picked p ON p.id = q.scope_id
            ), clock AS (
              SELECT {now} AS now
            ), reached AS (
              SELECT w.id, w.status = 'RUNNABLE' AND w.runnable_at <= (SELECT now FROM clock) AS due
                FROM {schema}.run w JOIN requested q ON w.root_id = q.root_id
               WHERE (w.status IN ('RUNNABLE', 'PARKED', 'HELD') OR (w.status = 'WAITING' AND w.phase = 'HAPPY'))
                 AND w.lineage[1:cardinality(q.lineage)] = q.lineage
                 AND coalesce(w.cancel_from, 1) <= cardinality(q.lineage) -- runs it reaches
            ), due AS ( -- a step may run on it: skipped when locked (its claim or advance sees the cancellation)
              SELECT id FROM {schema}.run WHERE id IN (SELECT id FROM reached WHERE due) FOR UPDATE SKIP LOCKED
            ), woken AS ( -- the others, as a single cancel wakes them: waiting for their locks, re-checked as locked
              UPDATE {schema}.run SET status = 'RUNNABLE', runnable_at = (SELECT now FROM clock)
               WHERE id IN (SELECT id FROM due UNION ALL SELECT id FROM reached WHERE NOT due)
                 AND (status IN ('RUNNABLE', 'PARKED', 'HELD') OR (status = 'WAITING' AND phase = 'HAPPY'))
              RETURNING saga
            ), notified AS (
              SELECT pg_notify('coop_' || ?, w.saga) FROM (SELECT DISTINCT saga FROM woken) w
            ), audited AS ( -- one entry per hierarchy: its root message, no scope
              INSERT INTO {schema}.audit (message_id, lineage, action, actor, reason, outcome)
              SELECT root_id, NULL, 'cancel-selection', ?, ?,
                     'REQUESTED for ' || count(*) || ' run(s) of a selection: ' || ?
                FROM requested GROUP BY root_id
            )
            SELECT (SELECT count(*)::int FROM requested), (SELECT count(*) FROM notified)
            """;
    /**
     * Every picked run still committed, with nothing running in its scope or above it and no picked ancestor (the
     * ancestor's rollback undoes it, children first): the scope's rollback request, as {@link Operations#rollback}.
     */
    private static final String ROLLBACK = """
            WITH batch AS (
              SELECT id, message_id, lineage, finished_at, root_id FROM {schema}.run
               WHERE id = ANY(?::uuid[]) AND status = 'COMMITTED'
               FOR UPDATE SKIP LOCKED
            ), picked AS (
              SELECT b.* FROM batch b
               WHERE NOT EXISTS (SELECT 1 FROM {schema}.run a
                                  WHERE a.root_id = b.root_id
                                    AND a.status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD')
                                    AND a.lineage[1:cardinality(b.lineage)] = b.lineage)
                 AND NOT EXISTS (SELECT 1 FROM {schema}.run a
                                  WHERE a.id = ANY(b.lineage[1:cardinality(b.lineage) - 1])
                                    AND a.status NOT IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED'))
                 AND NOT EXISTS (SELECT 1 FROM batch o
                                  WHERE o.id = ANY(b.lineage[1:cardinality(b.lineage) - 1]))
            ), logged AS (
              INSERT INTO {schema}.event (message_id, type, lineage, exception, root_id)
              SELECT message_id, 'ROLLBACK_EMITTED', lineage, ?::jsonb, root_id FROM picked
            ), requested AS (
              UPDATE {schema}.run r
                 SET phase = 'ROLLBACK', status = 'RUNNABLE', rollback_stage = 'START',
                     rollback_seq = r.steps_done - 1, rollback_cause = ?::jsonb, runnable_at = {now},
                     finished_at = NULL, pending_children = 0, failed_children = 0, version = r.version + 1
                FROM picked WHERE r.id = picked.id
              RETURNING r.lineage, r.saga, r.saga_version, r.status, r.runnable_at, picked.finished_at AS committed_at,
                        r.root_id
            ), {counted}, {notified}, audited AS (
              INSERT INTO {schema}.audit (message_id, lineage, action, actor, reason, outcome)
              SELECT root_id, NULL, 'rollback-selection', ?, ?,
                     'REQUESTED for ' || count(*) || ' run(s) of a selection: ' || ?
                FROM requested GROUP BY root_id
            )
            SELECT count(*)::int FROM requested, notified
            """.replace("{notified}", Wakes.notifying("notified", "requested", Wakes.NONE_LOCAL))
            .replace("{counted}", Counts.supersededCommits("counted", "requested"));

    /**
     * On Citus, the picked runs still unfinished on the happy path (a read without a lock), whose scopes are then
     * cancelled one by one by {@link RootCancellation}, as a single cancel is. Parameters: roots, ids.
     */
    private static final String PICKED_BY_ROOT = """
            SELECT id, message_id, lineage, root_id FROM {schema}.run
             WHERE root_id = ANY(?::uuid[]) AND id = ANY(?::uuid[]) AND phase = 'HAPPY'
               AND status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD')
             ORDER BY id
            """;
    /**
     * On Citus, the picked runs still committed (a read without a lock), each with its lineage, whose scopes are then
     * rolled back one by one by {@link Operations#rollbackPicked}. Parameters: roots, ids.
     */
    private static final String COMMITTED_BY_ROOT = """
            SELECT id, lineage, root_id FROM {schema}.run
             WHERE root_id = ANY(?::uuid[]) AND id = ANY(?::uuid[]) AND status = 'COMMITTED'
             ORDER BY cardinality(lineage), id
            """;
    /** On Citus, a hierarchy's audit entry. Parameters: root, actor, reason, count, the selection in words. */
    private static final String AUDITED_BY_ROOT = """
            INSERT INTO {schema}.audit (message_id, lineage, action, actor, reason, outcome)
            VALUES (?, NULL, ?, ?, ?, 'REQUESTED for ' || ? || ' run(s) of a selection: ' || ?)
            """;

    private final SchemaName schema;
    private final Time time;
    /** The cancellation by statements that name the root, on Citus only; else null. */
    private final RootCancellation byRoot;
    /** The rollback of one picked run by its root, on Citus only; else null. */
    private final Operations rollbackByRoot;

    public SelectionBatches(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
        this.byRoot = schema.citus() ? new RootCancellation(schema, time) : null;
        this.rollbackByRoot = schema.citus() ? new Operations(schema, time) : null;
    }

    /** Cancels the next batch of the selection's unfinished runs after {@code after} (null: from the start). */
    public Batch cancelBatch(Connection c, RunQuery selection, UUID after, String actor, String reason,
            String described) throws SQLException {
        Failure failure = new Failure(reason, CancellationRequestedException.TYPE, Operations.CLIENT_SOURCE,
                List.of(), List.of());
        ByRoot citus = byRoot == null
                ? null
                : (cc, ids, roots) -> cancelByRoot(cc, ids, roots, failure.toJson(), actor, reason, described);
        return act(c, selection, true, after, citus, ps -> {
            int i = 1;
            ps.setString(++i, failure.toJson());
            ps.setString(++i, failure.toJson());
            ps.setObject(++i, time.bind());
            ps.setString(++i, schema.value());
            ps.setString(++i, actor);
            ps.setString(++i, reason);
            ps.setString(++i, described);
        });
    }

    /** Rolls back the next batch of the selection's committed runs after {@code after} (null: from the start). */
    public Batch rollbackBatch(Connection c, RunQuery selection, UUID after, String actor, String reason,
            String described) throws SQLException {
        Failure failure = new Failure(reason, RollbackRequestedException.TYPE, Operations.CLIENT_SOURCE, List.of(),
                List.of());
        ByRoot citus = rollbackByRoot == null
                ? null
                : (cc, ids, roots) -> rollbackByRoot(cc, ids, roots, failure, actor, reason, described);
        return act(c, selection, false, after, citus, ps -> {
            int i = 1;
            ps.setString(++i, failure.toJson());
            ps.setString(++i, failure.toJson());
            ps.setObject(++i, time.bind());
            ps.setString(++i, actor);
            ps.setString(++i, reason);
            ps.setString(++i, described);
        });
    }

    /** The selection in words, for the audit ({@code saga=billing status=PARKED since=...}). */
    public static String describe(RunQuery q) {
        List<String> parts = new ArrayList<>();
        add(parts, "saga", q.saga());
        add(parts, "topic", q.topic());
        add(parts, "status", q.status());
        add(parts, "since", q.since());
        add(parts, "before", q.before());
        add(parts, "businessKey", q.businessKey());
        add(parts, "tag", q.tag());
        add(parts, "failureType", q.failureType());
        return String.join(" ", parts);
    }

    private static void add(List<String> parts, String name, Object value) {
        if (value != null) {
            parts.add(name + "=" + value);
        }
    }

    /** Whether the selection names what it acts on: a saga, a topic, a business key or a tag (never every run). */
    public static boolean names(RunQuery q) {
        return q.saga() != null || q.topic() != null || q.businessKey() != null || q.tag() != null;
    }

    private interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }

    /** A batch's action on Citus, by root: how many runs it acted on. */
    private interface ByRoot {
        int act(Connection c, List<UUID> ids, List<UUID> roots) throws SQLException;
    }

    private Batch act(Connection c, RunQuery selection, boolean cancel, UUID after, ByRoot citus, Binder rest)
            throws SQLException {
        List<UUID> ids = new ArrayList<>();
        List<UUID> roots = new ArrayList<>();
        pick(c, selection, cancel, after, ids, roots);
        if (ids.isEmpty()) {
            return new Batch(0, 0, after);
        }
        try (PreparedStatement ps = c.prepareStatement(LOCK)) {
            ps.setInt(1, Operations.OPERATOR_LOCK);
            ps.setArray(2, c.createArrayOf("uuid", roots.stream().distinct().toArray()));
            ps.executeQuery().close();
        }
        if (cancel) {
            Operations.waitForLocksAtMost(c, schema); // the wake waits for the locks of the runs it must wake
        }
        if (citus != null) {
            try {
                return new Batch(ids.size(), citus.act(c, ids, roots), ids.getLast());
            } catch (SQLException e) {
                throw busy(cancel, e);
            }
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(cancel ? CANCEL : ROLLBACK))) {
            ps.setArray(1, c.createArrayOf("uuid", ids.toArray()));
            rest.bind(ps);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Batch(ids.size(), rs.getInt(1), ids.getLast());
            }
        } catch (SQLException e) {
            throw busy(cancel, e);
        }
    }

    private static SQLException busy(boolean cancel, SQLException e) {
        if (cancel && "55P03".equals(e.getSQLState())) {
            throw new dev.coop.failure.CoopValidationException("Cannot cancel this batch of the selection now:"
                    + " one of its waiting runs is busy; try again (the runs cancelled before it stay cancelled)");
        }
        return e;
    }

    /** {@link #CANCEL} on Citus: each picked run's scope cancelled by root, one audit entry per hierarchy. */
    private int cancelByRoot(Connection c, List<UUID> ids, List<UUID> roots, String failure, String actor,
            String reason, String described) throws SQLException {
        List<Object[]> picked = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(PICKED_BY_ROOT))) {
            ps.setArray(1, c.createArrayOf("uuid", roots.stream().distinct().toArray()));
            ps.setArray(2, c.createArrayOf("uuid", ids.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    picked.add(new Object[]{rs.getObject(2, UUID.class), rs.getArray(3).getArray(),
                            rs.getObject(4, UUID.class)});
                }
            }
        }
        Map<UUID, Integer> requested = new LinkedHashMap<>();
        for (Object[] run : picked) {
            if (byRoot.request(c, (UUID) run[0], (UUID[]) run[1], failure)) {
                requested.merge((UUID) run[2], 1, Integer::sum);
            }
        }
        audit(c, requested, "cancel-selection", actor, reason, described);
        return requested.values().stream().mapToInt(Integer::intValue).sum();
    }

    /** On Citus, one audit entry per hierarchy of {@code requested} (root -> runs acted on). */
    private void audit(Connection c, Map<UUID, Integer> requested, String action, String actor, String reason,
            String described) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(AUDITED_BY_ROOT))) {
            for (Map.Entry<UUID, Integer> root : requested.entrySet()) {
                ps.setObject(1, root.getKey());
                ps.setString(2, action);
                ps.setString(3, actor);
                ps.setString(4, reason);
                ps.setInt(5, root.getValue());
                ps.setString(6, described);
                ps.executeUpdate();
            }
        }
    }

    /**
     * {@link #ROLLBACK} on Citus: each picked run still committed with no picked ancestor (the ancestor's rollback
     * undoes it, children first) rolled back by its root, one audit entry per hierarchy.
     */
    private int rollbackByRoot(Connection c, List<UUID> ids, List<UUID> roots, Failure failure, String actor,
            String reason, String described) throws SQLException {
        Map<UUID, UUID> picked = new LinkedHashMap<>(); // run id -> root, ancestors first
        Map<UUID, UUID[]> lineages = new java.util.HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(COMMITTED_BY_ROOT))) {
            ps.setArray(1, c.createArrayOf("uuid", roots.stream().distinct().toArray()));
            ps.setArray(2, c.createArrayOf("uuid", ids.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    UUID id = rs.getObject(1, UUID.class);
                    picked.put(id, rs.getObject(3, UUID.class));
                    lineages.put(id, (UUID[]) rs.getArray(2).getArray());
                }
            }
        }
        Map<UUID, Integer> requested = new LinkedHashMap<>();
        for (Map.Entry<UUID, UUID> run : picked.entrySet()) {
            UUID[] lineage = lineages.get(run.getKey());
            boolean ancestorPicked = java.util.Arrays.stream(lineage, 0, lineage.length - 1)
                    .anyMatch(picked::containsKey);
            if (!ancestorPicked && rollbackByRoot.rollbackPicked(c, run.getValue(), run.getKey(), failure)) {
                requested.merge(run.getValue(), 1, Integer::sum);
            }
        }
        audit(c, requested, "rollback-selection", actor, reason, described);
        return requested.values().stream().mapToInt(Integer::intValue).sum();
    }

    private void pick(Connection c, RunQuery selection, boolean cancel, UUID after, List<UUID> ids, List<UUID> roots)
            throws SQLException {
        StringBuilder where = new StringBuilder(cancel
                ? "r.phase = 'HAPPY' AND r.status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD')"
                : "r.status = 'COMMITTED'");
        List<Object> values = new ArrayList<>();
        RunListing.filter(selection, where, values);
        try (PreparedStatement ps = c
                .prepareStatement(schema.sql((schema.citus() ? PICK_BY_ROOT : PICK).formatted(where)))) {
            int i = 0;
            for (Object v : values) {
                ps.setObject(++i, v);
            }
            ps.setObject(++i, after == null ? new UUID(0, 0) : after);
            ps.setInt(++i, BulkActions.BATCH);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getObject(1, UUID.class));
                    roots.add(rs.getObject(2, UUID.class));
                }
            }
        }
    }
}
