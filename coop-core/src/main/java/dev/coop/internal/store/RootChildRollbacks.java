package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.UUID;

/**
 * {@link ChildSql#REQUEST_CHILD_ROLLBACKS} on Citus ({@link SchemaName#citus()}), in statements of one kind each. The
 * one statement ran through the coordinator there: its {@code ROLLBACK_EMITTED} events by {@code INSERT ... SELECT}
 * from a CTE, its update of the children joined by id alone (every shard, on both workers) and its count of superseded
 * commits in the coordinator's {@code run_count} as a local task of the distributed plan, so every rollback that asked
 * children (or an external task's run) to roll back committed in two phases. Here: the children read by the parent's
 * root (one shard), the events as {@code INSERT ... VALUES} of bound rows (ids from the coordinator's sequence, in
 * order), the committed children woken by {@code root_id = ?} (one shard), and the count on the coordinator in a
 * statement of its own. No notification: on Citus engines poll ({@code notify_off}).
 */
final class RootChildRollbacks {
    /** The step instance's children, by the parent's root. */
    static final String TARGETS = """
            SELECT r.id, r.message_id, r.status, r.finished_at FROM {schema}.run r
             WHERE r.root_id = ? AND r.parent_id = ? AND r.parent_seq = ?
            """;

    private static final String EMITTED_INTO = """
            INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, root_id)
            VALUES %s
            """;

    private static final String EMITTED_ROW = "(?::uuid, 'ROLLBACK_EMITTED', ?, ?, ?, ?::uuid[], ?::jsonb, ?::uuid)";

    /** A ROLLBACK_EMITTED for each of {@code messages} messages. */
    static String emitted(int messages) {
        return EMITTED_INTO.formatted(String.join(",\n       ", java.util.Collections.nCopies(messages, EMITTED_ROW)));
    }

    /** {@link #emitted} of one message (as audited). */
    static final String EMITTED = emitted(1);

    /** The committed ones among them (not external tasks' runs: see ExternalTasks) asked to roll back, one shard. */
    static final String WOKEN = """
            UPDATE {schema}.run r
               SET phase = 'ROLLBACK', status = 'RUNNABLE', rollback_stage = 'START', parent_context = ?, awaited = true,
                   rollback_seq = r.steps_done - 1, rollback_cause = ?::jsonb, runnable_at = {now},
                   finished_at = NULL, pending_children = 0, failed_children = 0, version = r.version + 1
             WHERE r.root_id = ? AND r.id = ANY(?::uuid[]) AND r.status = 'COMMITTED' AND r.saga <> '~external-task'
            RETURNING r.id, r.saga
            """;

    /** The commits the woken rows no longer show, counted on the coordinator ({@link Counts#supersededCommits}). */
    static final String COUNTED = """
            INSERT INTO {schema}.run_count AS c (minute, saga, shard, committed)
            SELECT date_trunc('minute', u.committed_at), u.saga, pg_backend_pid(), count(*)
              FROM unnest(?::text[]::timestamptz[], ?::text[]) AS u(committed_at, saga)
             WHERE u.committed_at IS NOT NULL AND left(u.saga, 1) <> '~' GROUP BY 1, 2
            ON CONFLICT (minute, saga, shard) DO UPDATE SET committed = c.committed + EXCLUDED.committed
            """;

    /** UUIDs in PostgreSQL's order (unsigned, byte by byte), which their text's order is. */
    static final java.util.Comparator<UUID> IN_SQL_ORDER = java.util.Comparator.comparing(UUID::toString);

    private final SchemaName schema;
    private final Time time;

    RootChildRollbacks(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    /** A child as {@link #TARGETS} reads it. */
    private record Target(UUID message, String status, OffsetDateTime finishedAt) {
    }

    /** As {@link ChildQueries#requestChildRollbacks}. */
    Map<String, Integer> request(Connection c, ClaimedRun run, String engine, String step, String cause, int seq,
            String parentContext) throws SQLException {
        Map<UUID, Target> targets = targets(c, run, seq);
        if (targets.isEmpty()) {
            return Map.of();
        }
        emit(c, run, engine, step, cause, targets.values().stream().map(Target::message)
                .collect(java.util.stream.Collectors.toCollection(() -> new TreeSet<>(IN_SQL_ORDER))));
        List<UUID> committed = targets.entrySet().stream().filter(t -> t.getValue().status().equals("COMMITTED"))
                .map(Map.Entry::getKey).toList();
        if (committed.isEmpty()) {
            return Map.of();
        }
        Map<String, Integer> woken = new HashMap<>();
        List<OffsetDateTime> committedAt = new ArrayList<>();
        List<String> sagas = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(WOKEN))) {
            ps.setString(1, parentContext);
            ps.setString(2, cause);
            ps.setObject(3, time.bind());
            ps.setObject(4, run.rootId());
            ps.setArray(5, c.createArrayOf("uuid", committed.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    woken.merge(rs.getString(2), 1, Integer::sum);
                    committedAt.add(targets.get(rs.getObject(1, UUID.class)).finishedAt());
                    sagas.add(rs.getString(2));
                }
            }
        }
        count(c, committedAt, sagas);
        return woken;
    }

    private Map<UUID, Target> targets(Connection c, ClaimedRun run, int seq) throws SQLException {
        Map<UUID, Target> targets = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TARGETS))) {
            ps.setObject(1, run.rootId());
            ps.setObject(2, run.id());
            ps.setInt(3, seq);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    targets.put(rs.getObject(1, UUID.class), new Target(rs.getObject(2, UUID.class),
                            rs.getString(3), rs.getObject(4, OffsetDateTime.class)));
                }
            }
        }
        return targets;
    }

    /** The ROLLBACK_EMITTED of each message, in the messages' order (PostgreSQL's order of UUIDs, as the one statement's). */
    private void emit(Connection c, ClaimedRun run, String engine, String step, String cause,
            TreeSet<UUID> messages) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(emitted(messages.size())))) {
            var lineage = c.createArrayOf("uuid", run.lineage());
            int i = 0;
            for (UUID message : messages) {
                ps.setObject(++i, message, Types.OTHER);
                ps.setString(++i, run.saga());
                ps.setString(++i, engine);
                ps.setString(++i, step);
                ps.setArray(++i, lineage);
                ps.setString(++i, cause);
                ps.setObject(++i, run.rootId(), Types.OTHER);
            }
            ps.executeUpdate();
        }
    }

    private void count(Connection c, List<OffsetDateTime> committedAt, List<String> sagas) throws SQLException {
        if (sagas.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(COUNTED))) {
            ps.setArray(1, c.createArrayOf("text", committedAt.stream().map(t -> t == null ? null : t.toString())
                    .toArray()));
            ps.setArray(2, c.createArrayOf("text", sagas.toArray()));
            ps.executeUpdate();
        }
    }
}
