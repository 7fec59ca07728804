package dev.coop.internal.task;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.SchemaName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * {@link TaskSql#TIME_OUT} on Citus ({@link SchemaName#citus()}), which refuses the one statement (its runs are
 * locked by id alone, and it writes the coordinator's {@code external_task} and the hierarchy's shard together). In
 * the one statement's order: the overdue tasks read on the coordinator (with their failures), their runs locked
 * {@code SKIP LOCKED} and settled by {@code root_id = ?} (one shard), the tasks marked, the runs' events written from
 * bound values (ids from the coordinator's sequence, in order), the parent's count (one shard), and the next timeout.
 */
final class RootTimeOut {
    /** The instance's overdue open tasks and the failure each run ends with (on the coordinator). */
    static final String OVERDUE = """
            SELECT t.run_id, jsonb_build_object(
                       'message', format('External task %s was not settled by its timeout (%s)', t.name, t.timeout_at),
                       'type', 'dev.coop.failure.ExternalTaskTimedOutException', 'source', 'coop',
                       'stackTrace', '[]'::jsonb, 'causes', '[]'::jsonb)::text
              FROM {schema}.external_task t
             WHERE t.parent_id = ? AND t.parent_seq = ? AND t.state = 'OPEN' AND t.timeout_at <= {now}
             ORDER BY t.run_id
            """;

    /** Their runs that no settlement holds and still wait, settled (one shard), in id order. */
    static final String SETTLED = """
            WITH d AS (
              SELECT r.id FROM {schema}.run r
               WHERE r.root_id = ? AND r.id = ANY(?::uuid[]) AND r.started_at IS NULL
                 AND r.status IN ('WAITING', 'RUNNABLE')
               ORDER BY r.id
               FOR UPDATE SKIP LOCKED
            ), settled AS (
              UPDATE {schema}.run r
                 SET status = 'ROLLED_BACK', phase = 'ROLLBACK', finished_at = {now}, version = r.version + 1,
                     failure = u.failure::jsonb
                FROM d JOIN unnest(?::uuid[], ?::text[]) AS u(id, failure) ON u.id = d.id
               WHERE r.root_id = ? AND r.id = d.id
              RETURNING r.id, r.message_id, r.lineage, r.failure
            )
            SELECT id, message_id, lineage::text, failure::text FROM settled ORDER BY id
            """;

    static final String TASKS = """
            UPDATE {schema}.external_task t SET state = 'TIMED_OUT', settled_at = {now}, settled_by = 'coop'
             WHERE t.run_id = ANY(?::uuid[])
            """;

    /**
     * The runs' events, ROLLING_BACK (with the failure) and ROLLED_BACK for each, as {@code INSERT ... VALUES} of
     * bound rows ({@link #logged}): routed to the hierarchy's shard, ids from the coordinator's sequence in order (an
     * {@code INSERT ... SELECT FROM unnest(...)} went through the coordinator: a two-phase commit).
     */
    private static final String LOGGED_INTO = """
            INSERT INTO {schema}.event (message_id, type, saga, engine, lineage, exception, root_id)
            VALUES %s
            """;

    /** One event of {@link #logged}: the message, the type, the engine, the lineage, the failure, the root. */
    private static final String LOGGED_ROW = "(?::uuid, ?, '~external-task', ?, ?::uuid[], ?::jsonb, ?::uuid)";

    /** {@link #LOGGED_INTO} of two events for each of {@code runs} runs. */
    static String logged(int runs) {
        return LOGGED_INTO.formatted(String.join(",\n       ", java.util.Collections.nCopies(2 * runs, LOGGED_ROW)));
    }

    /** {@link #logged}: one run's two events (as audited). */
    static final String LOGGED = logged(1);

    static final String COUNTED = """
            UPDATE {schema}.run p SET failed_children = p.failed_children + ? WHERE p.root_id = ? AND p.id = ?
            """;

    static final String NEXT = """
            SELECT min(t.timeout_at) FROM {schema}.external_task t
             WHERE t.parent_id = ? AND t.parent_seq = ? AND t.state = 'OPEN' AND t.timeout_at > {now}
            """;

    private final SchemaName schema;

    RootTimeOut(SchemaName schema) {
        this.schema = schema;
    }

    /** As {@link ExternalTasks#timeOut}. */
    ExternalTasks.TimedOut timeOut(Connection c, ClaimedRun run, int seq, String engine) throws SQLException {
        OffsetDateTime now = run.claimedAt();
        List<UUID> overdue = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(OVERDUE))) {
            ps.setObject(1, run.id());
            ps.setInt(2, seq);
            ps.setObject(3, now);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    overdue.add(rs.getObject(1, UUID.class));
                    failures.add(rs.getString(2));
                }
            }
        }
        int count = overdue.isEmpty() ? 0 : settle(c, run, engine, now, overdue, failures);
        try (PreparedStatement ps = c.prepareStatement(schema.sql(NEXT))) {
            ps.setObject(1, run.id());
            ps.setInt(2, seq);
            ps.setObject(3, now);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new ExternalTasks.TimedOut(count, rs.getObject(1, OffsetDateTime.class));
            }
        }
    }

    private int settle(Connection c, ClaimedRun run, String engine, OffsetDateTime now, List<UUID> overdue,
            List<String> failures) throws SQLException {
        List<UUID> ids = new ArrayList<>();
        List<UUID> messages = new ArrayList<>();
        List<String> lineages = new ArrayList<>();
        List<String> settledFailures = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(SETTLED))) {
            var array = c.createArrayOf("uuid", overdue.toArray());
            ps.setObject(1, run.rootId());
            ps.setArray(2, array);
            ps.setObject(3, now);
            ps.setArray(4, array);
            ps.setArray(5, c.createArrayOf("text", failures.toArray()));
            ps.setObject(6, run.rootId());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getObject(1, UUID.class));
                    messages.add(rs.getObject(2, UUID.class));
                    lineages.add(rs.getString(3));
                    settledFailures.add(rs.getString(4));
                }
            }
        }
        if (ids.isEmpty()) {
            return 0;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TASKS))) {
            ps.setObject(1, now);
            ps.setArray(2, c.createArrayOf("uuid", ids.toArray()));
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(logged(ids.size())))) {
            int i = 0;
            for (int k = 0; k < ids.size(); k++) {
                for (String type : new String[]{"ROLLING_BACK", "ROLLED_BACK"}) {
                    ps.setObject(++i, messages.get(k), Types.OTHER);
                    ps.setString(++i, type);
                    ps.setString(++i, engine);
                    ps.setString(++i, lineages.get(k)); // the lineage's text, as SETTLED returns it
                    ps.setString(++i, type.equals("ROLLING_BACK") ? settledFailures.get(k) : null);
                    ps.setObject(++i, run.rootId(), Types.OTHER);
                }
            }
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(COUNTED))) {
            ps.setInt(1, ids.size());
            ps.setObject(2, run.rootId());
            ps.setObject(3, run.id());
            ps.executeUpdate();
        }
        return ids.size();
    }
}
