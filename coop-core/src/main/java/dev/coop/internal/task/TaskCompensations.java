package dev.coop.internal.task;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The compensations of completed external tasks when their scope rolls back, in two moves so that a task says what
 * happened: the rollback of the opening instance marks them COMPENSATING and launches what they declared (the message
 * recorded on the task); once the rollback's children finished, it settles them COMPENSATED when every run of that
 * message committed, COMPENSATION_FAILED otherwise, which the rollback counts like a child whose rollback failed.
 */
public final class TaskCompensations {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /**
     * The completed tasks of a step instance being rolled back, locked: each becomes COMPENSATING (COMPENSATED when
     * it declared nothing) and its run ROLLED_BACK (it is asked to roll back: the ROLLBACK_EMITTED is the child
     * rollback's), and its compensation comes back to be launched.
     */
    static final String COMPENSATE = """
            WITH done AS (
              SELECT t.run_id FROM {schema}.external_task t
               WHERE t.parent_id = ? AND t.parent_seq = ? AND t.state = 'COMPLETED'
               ORDER BY t.run_id
               FOR UPDATE
            ), task AS (
              UPDATE {schema}.external_task t
                 SET state = CASE WHEN t.compensation_topic IS NULL THEN 'COMPENSATED' ELSE 'COMPENSATING' END,
                     settled_at = {now}
                FROM done WHERE t.run_id = done.run_id
              RETURNING t.run_id, t.name, t.compensation_topic, t.compensation_payload
            ), runs AS (
              UPDATE {schema}.run r SET status = 'ROLLED_BACK', phase = 'ROLLBACK', failure = ?::jsonb,
                                        finished_at = {now}, version = r.version + 1
                FROM task WHERE r.id = task.run_id
              RETURNING r.id, r.message_id, r.lineage, r.root_id
            ), logged AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, root_id)
              SELECT r.message_id, e.type, '~external-task', ?, NULL, r.lineage, e.exception::jsonb, r.root_id
                FROM runs r
               CROSS JOIN (VALUES (1, 'ROLLING_BACK', ?::text), (2, 'ROLLED_BACK', NULL::text)) AS e(n, type, exception)
               ORDER BY r.id, e.n
            )
            SELECT run_id, name, compensation_topic, compensation_payload FROM task ORDER BY run_id
            """;

    /** The message each COMPENSATING task's compensation was launched as. */
    static final String LAUNCHED = """
            UPDATE {schema}.external_task t SET compensation_message_id = u.message_id
              FROM unnest(?::uuid[], ?::uuid[]) AS u(run_id, message_id)
             WHERE t.run_id = u.run_id AND t.state = 'COMPENSATING'
            """;

    /**
     * The COMPENSATING tasks of a step instance whose compensation's runs all finished (index {@code run_message}):
     * COMPENSATED when all committed, else COMPENSATION_FAILED; returns the failed ones with what their runs ended as
     * and the failures of those that rolled back (one that ended ROLLBACK_FAILED is already a failed child).
     */
    static final String SETTLE = """
            WITH launched AS (
              SELECT t.run_id, t.name, t.compensation_topic,
                     count(r.id) FILTER (WHERE r.status NOT IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED'))
                       AS running,
                     count(r.id) FILTER (WHERE r.status <> 'COMMITTED') AS failed,
                     string_agg(r.saga || ' ' || r.status, ', ' ORDER BY r.saga) FILTER (WHERE r.status <> 'COMMITTED')
                       AS outcomes,
                     coalesce(jsonb_agg(r.failure ORDER BY r.saga) FILTER (WHERE r.status = 'ROLLED_BACK'
                                                                             AND r.failure IS NOT NULL), '[]')
                       AS failures
                FROM {schema}.external_task t
                LEFT JOIN {schema}.run r ON r.message_id = t.compensation_message_id
               WHERE t.parent_id = ? AND t.parent_seq = ? AND t.state = 'COMPENSATING'
               GROUP BY t.run_id, t.name, t.compensation_topic
            ), settled AS (
              UPDATE {schema}.external_task t
                 SET state = CASE WHEN l.failed = 0 THEN 'COMPENSATED' ELSE 'COMPENSATION_FAILED' END,
                     settled_at = {now}
                FROM launched l WHERE t.run_id = l.run_id AND l.running = 0
              RETURNING t.run_id
            )
            SELECT l.name, l.compensation_topic, l.outcomes, l.failures::text
              FROM launched l JOIN settled s ON s.run_id = l.run_id
             WHERE l.failed > 0 ORDER BY l.run_id
            """;

    private final SchemaName schema;
    private final Time time;
    /** On Citus, the same in statements by root ({@link RootCompensations}); null on plain PostgreSQL. */
    private final RootCompensations byRoot;

    public TaskCompensations(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
        this.byRoot = schema.citus() ? new RootCompensations(schema, time) : null;
    }

    /** A compensation to launch: the task's run, the task it undoes, and what to launch (null topic: none declared). */
    public record Compensation(UUID taskRun, String task, String topic, String payload) {
    }

    /**
     * A compensation that did not commit: the task's name, the compensation's topic, what its runs ended as
     * ({@code saga STATUS, ...}), and the failures (JSON documents) of those that rolled back.
     */
    public record Failed(String task, String topic, String outcomes, List<String> failures) {
    }

    /**
     * The rollback of step instance {@code seq} of {@code run} reaches its completed tasks: they become COMPENSATING
     * (COMPENSATED when they declared nothing); returns what they declared to launch.
     */
    public List<Compensation> compensate(Connection c, ClaimedRun run, int seq, String engine, String cause)
            throws SQLException {
        if (byRoot != null) {
            return byRoot.compensate(c, run, seq, engine, cause);
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(COMPENSATE))) {
            OffsetDateTime now = time.bind();
            ps.setObject(1, run.id());
            ps.setInt(2, seq);
            ps.setObject(3, now);
            ps.setString(4, cause);
            ps.setObject(5, now);
            ps.setString(6, engine);
            ps.setString(7, cause);
            List<Compensation> found = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    found.add(new Compensation(rs.getObject(1, UUID.class), rs.getString(2), rs.getString(3),
                            rs.getString(4)));
                }
            }
            return found;
        }
    }

    /** Records the message each task's compensation was launched as (task run to message id). */
    public void launched(Connection c, Map<UUID, UUID> messages) throws SQLException {
        if (messages.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(LAUNCHED))) {
            ps.setArray(1, c.createArrayOf("uuid", messages.keySet().toArray()));
            ps.setArray(2, c.createArrayOf("uuid", messages.values().toArray()));
            ps.executeUpdate();
        }
    }

    /**
     * Settles the COMPENSATING tasks of instance {@code seq} of {@code runId} whose compensation finished; returns
     * those whose compensation did not commit.
     */
    public List<Failed> settle(Connection c, UUID runId, int seq) throws SQLException {
        if (byRoot != null) {
            return byRoot.settle(c, runId, seq);
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(SETTLE))) {
            ps.setObject(1, runId);
            ps.setInt(2, seq);
            ps.setObject(3, time.bind());
            List<Failed> failed = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    failed.add(new Failed(rs.getString(1), rs.getString(2), rs.getString(3),
                            jsonArray(rs.getString(4))));
                }
            }
            return failed;
        }
    }

    /** A JSON document as {@link #jsonArray} gives each element: Jackson's text of it. */
    static String normalised(String json) {
        try {
            return MAPPER.readTree(json).toString();
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("Unreadable failure of a compensation: " + json, e);
        }
    }

    /** The elements of a JSON array of objects, as text (the failures the statement aggregated). */
    private static List<String> jsonArray(String json) {
        List<String> out = new ArrayList<>();
        try {
            MAPPER.readTree(json).forEach(n -> out.add(n.toString()));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("Unreadable failures of a compensation: " + json, e);
        }
        return out;
    }
}
