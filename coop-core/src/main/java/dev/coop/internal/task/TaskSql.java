package dev.coop.internal.task;

/**
 * The SQL of external tasks ({@code external_task}, schema version 20). A task's place in the barrier is a run row of
 * saga {@value #SAGA} (never claimed): it is counted, read, settled and deleted like any child run.
 */
final class TaskSql {
    static final String SAGA = dev.coop.ExternalTask.SAGA;

    private TaskSql() {
    }

    /**
     * Opens the tasks of a step instance, with the step's transaction: their messages, EMITTED events, WAITING runs
     * and task rows. A key an open task holds is not taken (and comes back, for the caller to refuse the step).
     */
    static final String OPEN = """
            WITH input AS (
              SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
                                   ?::text[], ?::text[], ?::timestamptz[])
                       WITH ORDINALITY AS u(mid, rid, name, payload, token, task_key, ctopic, cpayload, result,
                                            timeout_at, n)
            ), msg AS (
              INSERT INTO {schema}.message (id, topic, payload, created_at, root_id)
              SELECT mid, name, payload::jsonb, {now}, ?::uuid FROM input ORDER BY n
            ), emitted AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, context, root_id)
              SELECT mid, 'EMITTED', ?, ?, ?, ?::uuid[], ?, ?::uuid FROM input ORDER BY n
              RETURNING 1
            ), runs AS ( -- a task that took a kept signal is completed at once (result set)
              INSERT INTO {schema}.run (id, message_id, saga, lineage, parent_id, parent_seq, status, context,
                                        runnable_at, result, started_at, finished_at, cancel_from, root_id)
              SELECT rid, mid, '~external-task', ?::uuid[] || ARRAY[rid], ?::uuid, ?::int,
                     CASE WHEN result IS NULL THEN 'WAITING' ELSE 'COMMITTED' END, ?, {now}, result,
                     CASE WHEN result IS NOT NULL THEN {now} END, CASE WHEN result IS NOT NULL THEN {now} END, ?::int,
                     ?::uuid
                FROM input ORDER BY n
            ), taken AS (
              INSERT INTO {schema}.event (message_id, type, saga, lineage, root_id)
              SELECT i.mid, e.type, '~external-task', ?::uuid[] || ARRAY[i.rid], ?::uuid
                FROM input i CROSS JOIN (VALUES (1, 'SEEN'), (2, 'COMMITTED')) AS e(k, type)
               WHERE i.result IS NOT NULL AND (SELECT count(*) FROM emitted) >= 0
               ORDER BY i.n, e.k
            ), tasks AS (
              INSERT INTO {schema}.external_task (run_id, message_id, parent_id, parent_seq, root_id, name, token,
                                                  task_key, compensation_topic, compensation_payload, deadline_at,
                                                  timeout_at, created_at, state, settled_at, settled_by)
              SELECT rid, mid, ?::uuid, ?::int, ?::uuid, name, token, task_key, ctopic, cpayload,
                     CASE WHEN ?::timestamptz IS NULL OR timeout_at < ?::timestamptz THEN timeout_at
                          ELSE ?::timestamptz END,
                     timeout_at, {now}, CASE WHEN result IS NULL THEN 'OPEN' ELSE 'COMPLETED' END,
                     CASE WHEN result IS NOT NULL THEN {now} END, CASE WHEN result IS NOT NULL THEN 'signal' END
                FROM input ORDER BY n
              ON CONFLICT (task_key) WHERE state = 'OPEN' DO NOTHING
              RETURNING task_key
            )
            SELECT i.task_key FROM input i
             WHERE i.task_key IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_key = i.task_key)
            """;

    /**
     * A waiting parent claimed early times out the open tasks of its instance whose own timeout passed (locked first,
     * {@code SKIP LOCKED}: a task being completed right now is left to that completion): the runs end ROLLED_BACK, the
     * tasks TIMED_OUT, and the parent counts them as failed children. Returns how many, and the next timeout of the
     * instance's open tasks.
     */
    static final String TIME_OUT = """
            WITH d AS (
              SELECT r.id FROM {schema}.external_task t JOIN {schema}.run r ON r.id = t.run_id
               WHERE t.parent_id = ? AND t.parent_seq = ? AND t.state = 'OPEN' AND t.timeout_at <= {now}
                 AND r.started_at IS NULL AND r.status IN ('WAITING', 'RUNNABLE')
               ORDER BY r.id
               FOR UPDATE OF r SKIP LOCKED
            ), settled AS (
              UPDATE {schema}.run r
                 SET status = 'ROLLED_BACK', phase = 'ROLLBACK', finished_at = {now}, version = r.version + 1,
                     failure = jsonb_build_object(
                         'message', format('External task %s was not settled by its timeout (%s)', t.name,
                                           t.timeout_at),
                         'type', 'dev.coop.failure.ExternalTaskTimedOutException', 'source', 'coop',
                         'stackTrace', '[]'::jsonb, 'causes', '[]'::jsonb)
                FROM d, {schema}.external_task t
               WHERE r.id = d.id AND t.run_id = d.id
              RETURNING r.id, r.message_id, r.lineage, r.failure, r.root_id
            ), tasks AS (
              UPDATE {schema}.external_task t SET state = 'TIMED_OUT', settled_at = {now}, settled_by = 'coop'
                FROM settled s WHERE t.run_id = s.id
            ), logged AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, lineage, exception, root_id)
              SELECT s.message_id, e.type, '~external-task', ?, s.lineage, CASE WHEN e.n = 1 THEN s.failure END,
                     s.root_id
                FROM settled s CROSS JOIN (VALUES (1, 'ROLLING_BACK'), (2, 'ROLLED_BACK')) AS e(n, type)
               ORDER BY s.id, e.n
            ), counted AS (
              UPDATE {schema}.run p SET failed_children = p.failed_children + (SELECT count(*) FROM settled)::int
               WHERE p.root_id = ? AND p.id = ? AND EXISTS (SELECT 1 FROM settled)
            )
            SELECT (SELECT count(*) FROM settled)::int,
                   (SELECT min(t.timeout_at) FROM {schema}.external_task t
                     WHERE t.parent_id = ? AND t.parent_seq = ? AND t.state = 'OPEN' AND t.timeout_at > {now})
            """;

    /** How a task is found: by its token, or by the key of the open task that holds it. */
    static final String BY_TOKEN = "t.token = ?";
    static final String BY_KEY = "t.task_key = ? AND t.state = 'OPEN'";

    /**
     * Settles an open task (complete or fail) in one statement: waits for its hierarchy's operator lock, shared (an
     * operator action holds it for a moment; the count-off that may commit the parent then finds it held: see
     * {@code commit_allowed}, schema version 24), then locks its run (first, as the parent's give-up does, so the two
     * meet in one order), marks the task and the run, logs it, and counts the run off at its parent, which
     * becomes runnable when it waited for nothing else. Returns one row: whether it settled, then the parent as
     * {@link dev.coop.internal.store.AdvanceSql#COUNT_OFF} returns it (nulls when the parent was not counted off).
     * {@code %s}: {@link #BY_TOKEN} or {@link #BY_KEY}; {@code {alone}}: nothing, or {@link #ALONE}.
     */
    static final String SETTLE = """
            WITH target AS ( -- first the hierarchy's operator lock, shared (version 24; before any row lock)
              SELECT t.run_id, pg_advisory_xact_lock_shared(x'636f6f70'::int, hashtext(t.root_id::text)) AS turn
                FROM {schema}.external_task t WHERE %s
            ), locked AS (
              SELECT r.id FROM {schema}.run r
               WHERE r.id = (SELECT run_id FROM target) AND r.started_at IS NULL AND r.phase = 'HAPPY'
                 AND r.status IN ('WAITING', 'RUNNABLE') -- RUNNABLE: woken by a cancellation, not settled yet
                 {alone}
               FOR UPDATE
            ), task AS (
              UPDATE {schema}.external_task t SET state = ?, settled_at = {now}, settled_by = ?
               WHERE t.run_id = (SELECT id FROM locked) AND t.state = 'OPEN'
              RETURNING t.run_id
            ), settled AS (
              UPDATE {schema}.run r
                 SET status = ?, phase = ?, result = ?, failure = ?::jsonb, started_at = {now}, finished_at = {now},
                     version = r.version + 1
               WHERE r.id = (SELECT run_id FROM task)
              RETURNING r.id, r.message_id, r.lineage, r.parent_id, r.root_id, r.cancel_from
            ), logged AS (
              INSERT INTO {schema}.event (message_id, type, saga, lineage, exception, root_id)
              SELECT s.message_id, e.type, '~external-task', s.lineage, e.exception::jsonb, s.root_id
                FROM settled s CROSS JOIN unnest(?::text[], ?::text[]) WITH ORDINALITY AS e(type, exception, n)
               ORDER BY e.n
              RETURNING 1
            ), {countOff}
            """;

    /**
     * What {@link #SETTLE} adds (for {@code {alone}}) when it runs as a transaction of its own, committed as it returns
     * (one round trip): only while nothing has to follow in the same transaction, that is while the parent is not in
     * its last step (the count-off cannot commit it) and the task's message is no pending member of a join
     * ({@code join_pending_members} takes the shared advisory lock that attaching takes exclusively, and looks with a
     * snapshot taken after it, as every transaction finishing runs does). Otherwise the statement settles nothing and
     * the caller settles the task in a transaction.
     */
    static final String ALONE = """
            AND NOT EXISTS (SELECT 1 FROM {schema}.run p WHERE p.id = r.parent_id AND p.final_step IS NOT NULL)
                 AND NOT EXISTS (SELECT 1 FROM {schema}.join_pending_members(ARRAY[r.message_id]))""";

    /** The task's row with its run's outcome. {@code %s}: the condition; the key's open task first, else the latest. */
    static final String FIND = """
            SELECT t.run_id, t.message_id, r.lineage, t.name, t.token, t.task_key, t.state, m.payload::text,
                   r.result, r.failure::text, t.created_at, t.deadline_at, t.settled_at, t.settled_by
              FROM {schema}.external_task t
              JOIN {schema}.run r ON r.id = t.run_id
              JOIN {schema}.message m ON m.id = t.message_id
             WHERE %s
             ORDER BY t.state = 'OPEN' DESC, t.created_at DESC
             LIMIT 1
            """;

    /** Open tasks, oldest first (index {@code external_task_open}), optionally of one name. */
    static final String LIST_OPEN = """
            SELECT t.run_id, t.message_id, r.lineage, t.name, t.token, t.task_key, t.state, m.payload::text,
                   r.result, r.failure::text, t.created_at, t.deadline_at, t.settled_at, t.settled_by
              FROM {schema}.external_task t
              JOIN {schema}.run r ON r.id = t.run_id
              JOIN {schema}.message m ON m.id = t.message_id
             WHERE t.state = 'OPEN' AND (?::text IS NULL OR t.name = ?)
             ORDER BY t.created_at
             LIMIT ?
            """;

    /**
     * Takes the oldest signal kept for a key (a step opening a task that waits for a signal), after taking the key's
     * transaction-scoped advisory lock ({@link #LOCK_SIGNAL_KEY}, a statement of its own, so that this one's snapshot
     * follows it), which a sender takes too: of a signal sent and a task opened at the same time, the later to commit
     * sees the other.
     */
    static final String TAKE_SIGNAL = """
            DELETE FROM {schema}.signal s
             WHERE s.id = (SELECT x.id FROM {schema}.signal x
                            WHERE x.signal_key = ? AND x.expires_at > {now}
                            ORDER BY x.id LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING s.payload
            """;

    /** The sender's side: the key's lock (then, in new statements, deliver to the open task or keep the signal). */
    static final String LOCK_SIGNAL_KEY = "SELECT pg_advisory_xact_lock(hashtext('coop.signal:' || ?::text)::bigint)";

    /** Keeps a signal no open task took, and deletes up to 100 expired ones (index {@code signal_expiry}). */
    static final String KEEP_SIGNAL = """
            WITH expired AS (
              DELETE FROM {schema}.signal WHERE id IN (SELECT id FROM {schema}.signal WHERE expires_at <= {now}
                                                         ORDER BY expires_at LIMIT 100)
            )
            INSERT INTO {schema}.signal (signal_key, payload, sent_by, created_at, expires_at)
            VALUES (?, ?, ?, {now}, {now} + ? * interval '1 millisecond')
            """;

    /** Open tasks by name, with the oldest's creation: a scan of the index of open tasks only. */
    static final String COUNT_OPEN = """
            SELECT name, count(*), min(created_at) FROM {schema}.external_task WHERE state = 'OPEN'
             GROUP BY name ORDER BY name
            """;

    /** The external tasks named so among the children of the given step instances of a run, newest instance first. */
    static final String TASK_RUNS = """
            SELECT r.id, r.message_id, r.saga, r.status, r.result, r.failure::text, t.parent_seq
              FROM {schema}.external_task t JOIN {schema}.run r ON r.id = t.run_id
             WHERE t.parent_id = ? AND t.parent_seq = ANY(?::int[]) AND t.name = ?
             ORDER BY t.parent_seq DESC, t.created_at
            """;
}
