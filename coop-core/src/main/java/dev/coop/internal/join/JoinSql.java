package dev.coop.internal.join;

/**
 * The text of every join statement (tables {@code join_group} and {@code join_member}), used by {@link JoinBook}
 * (starting, attaching, reporting, timeouts), {@link JoinSettlement} and {@link JoinReads}; {@code {schema}} and
 * {@code {now}} are filled in by the schema. Every value is a bind parameter.
 */
final class JoinSql {
    private static final String FINISHED = "('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED')";
    private static final String FAILED = "('ROLLED_BACK', 'ROLLBACK_FAILED')";

    static final String START = """
            INSERT INTO {schema}.join_group (id, grouping_key, expected, fail_if_any_failed, metadata, on_complete_topic,
                                             on_fail_topic, timeout_at)
            VALUES (?, ?, ?, ?, ?::jsonb, ?, ?, {now} + ?::bigint * interval '1 millisecond')
            """;

    /**
     * The engine's probe when runs finish: take the messages' advisory locks shared, then lock their pending
     * memberships and the joins (the function is in V2__joins.sql).
     */
    static final String LOCK_PENDING = "SELECT join_id, message_id FROM {schema}.join_pending_members(?)";

    /** Per message: whether every run finished, and whether any failed. A message without runs has no row. */
    static final String OUTCOMES = """
            SELECT message_id, bool_and(status IN %s), bool_or(status IN %s)
              FROM {schema}.run WHERE message_id = ANY(?) GROUP BY message_id
            """.formatted(FINISHED, FAILED);

    /**
     * Settles pending members and counts them at their joins; a join whose counts reach the expected count leaves
     * OPEN in this statement (an outcome message id is drawn for it). Returns every join counted, with whether this
     * statement ended it. Every caller holds the row locks of the joins involved, so the values read in
     * {@code ending} are the latest. The outcome ids are bound (one per join counted, by join id order), and the times
     * are <i>now</i> ({@code {now}}): no volatile function in an {@code UPDATE}, and none but immutable ones in a
     * {@code CASE}, which Citus refuses on its tables.
     */
    static final String SETTLE = """
            WITH input AS (
              SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::text[]) AS i(join_id, message_id, state)
            ), settled AS (
              UPDATE {schema}.join_member m
                 SET state = i.state, settled_by = ?, settled_at = {now}
                FROM input i
               WHERE m.join_id = i.join_id AND m.message_id = i.message_id AND m.state = 'PENDING'
              RETURNING m.join_id, m.state
            ), counted AS (
              SELECT join_id, count(*) FILTER (WHERE state = 'COMPLETED')::int AS completed,
                     count(*) FILTER (WHERE state = 'FAILED')::int AS failed
                FROM settled GROUP BY join_id
            ), ending AS (
              SELECT g.id, g.status = 'OPEN' AND g.completed + g.failed + c.completed + c.failed >= g.expected AS ends,
                     g.fail_if_any_failed AND g.failed + c.failed > 0 AS fails, c.completed, c.failed,
                     row_number() OVER (ORDER BY g.id) AS n
                FROM {schema}.join_group g JOIN counted c ON c.join_id = g.id
            ), ids AS (
              SELECT * FROM unnest(?::uuid[]) WITH ORDINALITY AS o(outcome, n)
            )
            UPDATE {schema}.join_group g
               SET completed = g.completed + e.completed, failed = g.failed + e.failed,
                   status = CASE WHEN NOT e.ends THEN g.status WHEN e.fails THEN 'FAILED' ELSE 'COMPLETED' END,
                   finished_at = CASE WHEN e.ends THEN {now} ELSE g.finished_at END,
                   outcome_message_id = CASE WHEN e.ends THEN i.outcome ELSE g.outcome_message_id END
              FROM ending e JOIN ids i ON i.n = e.n
             WHERE g.id = e.id
            RETURNING g.id, g.status, g.outcome_message_id, e.ends
            """;

    static final String IS_MEMBER = "SELECT 1 FROM {schema}.join_member WHERE join_id = ? AND message_id = ?";

    static final String ATTACH_LOCK_MESSAGE = "SELECT pg_advisory_xact_lock({schema}.join_lock_key(?))";

    static final String ATTACH_RUNS = "SELECT status FROM {schema}.run WHERE message_id = ?";

    static final String ATTACH_LOCK_JOIN = """
            SELECT g.status, g.expected, g.attached,
                   EXISTS (SELECT 1 FROM {schema}.join_member m WHERE m.join_id = g.id AND m.message_id = ?)
              FROM {schema}.join_group g WHERE g.id = ? FOR UPDATE
            """;

    static final String ATTACH_INSERT = """
            WITH member AS (
              INSERT INTO {schema}.join_member (join_id, message_id) VALUES (?, ?)
            )
            UPDATE {schema}.join_group SET attached = attached + 1 WHERE id = ?
            """;

    static final String REPORT_LOCK = """
            SELECT m.state
              FROM {schema}.join_member m JOIN {schema}.join_group g ON g.id = m.join_id
             WHERE m.join_id = ? AND m.message_id = ?
               FOR UPDATE
            """;

    /**
     * The due joins, numbered so that each takes one of the outcome ids bound (as many as the limit). The ids are
     * joined by their ordinality: Citus 13.2 crashes the backend on a bound array's subscript in this statement.
     */
    static final String FIRE_TIMEOUTS = """
            WITH due AS (
              SELECT id FROM {schema}.join_group
               WHERE status = 'OPEN' AND timeout_at <= {now}
               ORDER BY timeout_at
               LIMIT ?
                 FOR UPDATE SKIP LOCKED
            ), numbered AS (
              SELECT id, row_number() OVER (ORDER BY id) AS n FROM due
            ), ids AS (
              SELECT * FROM unnest(?::uuid[]) WITH ORDINALITY AS o(outcome, n)
            )
            UPDATE {schema}.join_group g
               SET status = 'TIMED_OUT', finished_at = {now}, outcome_message_id = i.outcome
              FROM numbered d JOIN ids i ON i.n = d.n WHERE g.id = d.id
            RETURNING g.id, g.outcome_message_id
            """;

    static final String NEXT_TIMEOUT = """
            SELECT ceil(extract(epoch FROM min(timeout_at) - {now}) * 1000)::bigint
              FROM {schema}.join_group WHERE status = 'OPEN' AND timeout_at IS NOT NULL
            """;

    static final String JOIN_COLUMNS = """
            SELECT id, grouping_key, status, expected, attached, completed, failed, fail_if_any_failed, metadata::text,
                   on_complete_topic, on_fail_topic, timeout_at, created_at, finished_at, outcome_message_id
              FROM {schema}.join_group
            """;

    static final String MEMBERS = """
            SELECT message_id, state, settled_by IS NOT DISTINCT FROM 'REPORT', attached_at, settled_at
              FROM {schema}.join_member WHERE join_id = ? ORDER BY attached_at, message_id
            """;

    static final String MEMBERS_OF_JOINS = """
            SELECT message_id, state, settled_by IS NOT DISTINCT FROM 'REPORT', attached_at, settled_at, join_id
              FROM {schema}.join_member WHERE join_id = ANY(?) ORDER BY join_id, attached_at, message_id
            """;

    static final String JOIN_EXISTS = "SELECT 1 FROM {schema}.join_group WHERE id = ?";

    private JoinSql() {
    }
}
