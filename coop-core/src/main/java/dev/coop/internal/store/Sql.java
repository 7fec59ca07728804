package dev.coop.internal.store;

import dev.coop.internal.step.Advance;
import dev.coop.internal.task.ExternalTasks;
/** The SQL of the engine's hot path. {@code {schema}} is replaced by the validated schema name. */
public final class Sql {
    private Sql() {
    }

    /**
     * Where a claim sets {@code idle_in_transaction_session_timeout} for the transaction it begins (an engine's
     * {@code idleInTransactionTimeout}): a partitioned or dead engine's transaction, idle on the server, is ended by the
     * server then, and the run's lock with it. Set in the claim's own statement: no round trip of its own.
     */
    static final String IDLE_IN_TRANSACTION = "{idleInTransaction}";

    /** {@code sql} with its {@link #IDLE_IN_TRANSACTION} set to {@code timeout} (null or zero: the server's setting). */
    static String idleInTransaction(String sql, java.time.Duration timeout) {
        return sql.replace(IDLE_IN_TRANSACTION, timeout == null || timeout.isZero()
                ? "NULL::text"
                : "set_config('idle_in_transaction_session_timeout', '" + timeout.toMillis() + "', true)");
    }

    /**
     * What a step's transaction sets its connection's {@code application_name} to (transaction-locally, so the
     * connection gets its own back at commit), followed by the engine's id: inspection reads the engine that runs a
     * step from {@code pg_stat_activity} of the transaction that holds the run's lock. A setting, not a write.
     */
    public static final String RUNNING_AS = "coop ";

    /**
     * Claim: lock one runnable run (skipping rows other engines hold), write its SEEN if this is its first step, and
     * look up a cancellation of any scope above it (a primary-key probe per lineage element). The lock is held by
     * the transaction until it commits; a crashed engine's lock dies with its connection. {@code %s} is the
     * selection (by saga and due time, or by run id). The newest step instances (the step log: the events that carry
     * a {@code step_seq}, schema version 23) are read with the statement's snapshot, which may predate the commit of the run version it locked: the caller checks that they
     * reach {@code steps_done - 1} (and that the instance being rolled back was seen) and reads them again if not.
     */
    static final String CLAIM = """
            WITH claimed AS (
              SELECT r.id, r.saga, r.saga_version, r.message_id, r.lineage, r.parent_id, r.phase = 'ROLLBACK' AS rollback, r.step_index,
                     r.next_step,
                     r.steps_done, r.iterations, r.attempt, r.started_at IS NOT NULL AS started, r.failed_children,
                     r.rollback_seq, r.rollback_stage, r.rollback_cause::text AS rollback_cause, r.resolution, r.retries,
                     r.version, r.context, r.parent_context, r.finally_done, r.pending_children, r.awaited,
                     r.waiting_since, r.runnable_at, {now} AS claimed_at
                FROM {schema}.run r
               WHERE %s
               LIMIT 1
               FOR UPDATE SKIP LOCKED
            ), me AS (
              SELECT ?::text AS engine
            ), seen AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, lineage)
              SELECT c.message_id, 'SEEN', c.saga, me.engine, c.lineage FROM claimed c, me -- a step that ran COMMIT
               WHERE NOT started AND {schema}.seen_missing(c.message_id, c.saga) -- itself made its SEEN durable (V16)
            )
            SELECT c.*, m.topic, m.payload::text AS payload, m.created_at AS message_created_at,
                   set_config('application_name', {runningAs} || me.engine, true) AS running_as, -- see RUNNING_AS
                   t.recent, t.recent_top, rs.instance AS rollback_instance, rs.iteration AS rollback_iteration,
                   (SELECT x.failure::text FROM {schema}.cancellation x WHERE x.scope_id = ANY(c.lineage)
                     ORDER BY cardinality(x.lineage) LIMIT 1) AS cancellation,
                   pg_current_xact_id()::text AS xact, {idleInTransaction} AS idle_in_transaction
              FROM claimed c CROSS JOIN me JOIN {schema}.message m ON m.id = c.message_id
              LEFT JOIN LATERAL (SELECT array_agg(s.instance ORDER BY s.step_seq DESC) AS recent,
                                        max(s.step_seq) AS recent_top
                                   FROM (SELECT e.step_seq, e.instance FROM {schema}.event e -- index event_message
                                          WHERE NOT c.rollback -- a one-time filter: no scan on the rollback path
                                            AND e.message_id = c.message_id AND e.saga = c.saga
                                            AND e.step_seq < c.steps_done
                                          ORDER BY e.step_seq DESC LIMIT %d) s) t ON NOT c.rollback
              LEFT JOIN LATERAL (SELECT e.instance, e.iteration FROM {schema}.event e
                                  WHERE c.rollback -- a one-time filter: no probe on the happy path
                                    AND e.message_id = c.message_id AND e.saga = c.saga
                                    AND e.step_seq = c.rollback_seq
                                  LIMIT 1) rs ON c.rollback
            """
            .replace("%d", String.valueOf(StepHistory.RECENT)).replace("{runningAs}", "'" + RUNNING_AS + "'");

    /** A run's message and saga, which name its rows in the log: two initplans, then index conditions. */
    private static final String RUN_IN_LOG = """
            message_id = (SELECT r.message_id FROM {schema}.run r WHERE r.id = ?::uuid)
               AND saga = (SELECT r.saga FROM {schema}.run r WHERE r.id = ?::uuid)""";

    /**
     * The step log's instance {@code seq} of a run: its step index and iteration, an index lookup of
     * {@code event_message (message_id, saga, step_seq)}. Parameters: the run id twice, seq.
     */
    static final String INSTANCE_AT = """
            SELECT instance, iteration FROM {schema}.event
             WHERE {run} AND step_seq = ? LIMIT 1
            """.replace("{run}", RUN_IN_LOG);

    /**
     * A run's instances before {@code seq}, newest first, at most {@code limit}: a backward walk of
     * {@code event_message (message_id, saga, step_seq)} that reads {@code limit} entries however long the run looped.
     * Parameters: the run id twice, seq, limit.
     */
    static final String INSTANCES_BEFORE = """
            SELECT instance FROM {schema}.event
             WHERE {run} AND step_seq < ? ORDER BY step_seq DESC LIMIT ?
            """.replace("{run}", RUN_IN_LOG);

    /**
     * The reclaim of a continuation, sent after its advance and COMMIT by the worker that wrote them: it locks the run
     * only if it is still the version that advance left (so every column this worker did not read again is still what
     * it knows: the message, the lineage, the step instances) and reads only the run's own row, the cancellation of its
     * scope and the transaction id. No SEEN (the run started), no message join, no read of the step log: the
     * caller builds the history from the previous claim plus the instance it just wrote. A run another transaction
     * moved meanwhile is not locked; the caller then reclaims it in full.
     */
    static final String RECLAIM_CONTINUATION = """
            SELECT r.step_index, r.next_step, r.steps_done, r.iterations, r.attempt, r.started_at IS NOT NULL,
                   r.failed_children, r.rollback_seq, r.rollback_stage, r.rollback_cause::text, r.resolution, r.retries,
                   r.version, r.context, r.parent_context, r.finally_done, r.pending_children, r.awaited,
                   r.waiting_since, r.runnable_at, {now},
                   (SELECT x.failure::text FROM {schema}.cancellation x WHERE x.scope_id = ANY(r.lineage)
                     ORDER BY cardinality(x.lineage) LIMIT 1),
                   pg_current_xact_id()::text, {idleInTransaction},
                   set_config('application_name', {runningAs} || ?::text, true) -- as the claim does
              FROM {schema}.run r
             WHERE r.id = ? AND r.version = ? AND r.status = 'RUNNABLE' AND r.phase = 'HAPPY'
               AND r.runnable_at <= {now}
               FOR UPDATE SKIP LOCKED
            """.replace("{runningAs}", "'" + RUNNING_AS + "'");

    /**
     * Emit: write messages, their EMITTED events, and one run for every saga registered for each topic right now,
     * with the saga's current version (the highest registered). Runs in a scope get the emitting run as parent; the
     * parent waits for them. A message with an idempotency key
     * that another message of its topic already holds is not written (nor its event and runs); it comes back as
     * {@code '!' || n} (its ordinal) so that the caller can look the holder up. A run with an ordering key may be
     * created HELD instead of RUNNABLE (trigger {@code run_keyed_hold}, schema version 10).
     *
     * <p>A run's lineage is built with {@code array || ARRAY[id]}, never {@code array || id}: appending an element
     * yields an expanded array, which PostgreSQL stores with a 4-byte header where every later update of the row
     * writes the same array with a 1-byte one; the bytes differ, so the run's first update could never be HOT (a new
     * entry in every index of {@code run}).
     */
    static final String EMIT = """
            WITH input AS (
              SELECT u.id, u.topic, u.payload::jsonb AS payload, u.context, u.due, u.idem, u.priority, u.okey, u.n
                FROM unnest(?::uuid[], ?::text[], ?::text[], ?::text[], ?::timestamptz[], ?::text[], ?::int[],
                            ?::text[])
                     WITH ORDINALITY AS u(id, topic, payload, context, due, idem, priority, okey, n)
            ), msg AS (
              INSERT INTO {schema}.message (id, topic, payload, created_at, idempotency_key)
              SELECT id, topic, payload, {now}, idem FROM input ORDER BY n
              ON CONFLICT (topic, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
              RETURNING id, idempotency_key IS NOT NULL AS keyed
            ), duplicate AS ( -- keyed messages not written: the key was taken (usually empty)
              SELECT id, n FROM input WHERE idem IS NOT NULL AND id NOT IN (SELECT id FROM msg WHERE keyed)
            ), written AS (
              SELECT * FROM input WHERE id NOT IN (SELECT id FROM duplicate)
            ), emitted AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, context)
              SELECT id, 'EMITTED', ?, ?, ?, coalesce(?::uuid[], ARRAY[id]), context FROM written ORDER BY n
            ), runs AS (
              INSERT INTO {schema}.run (id, message_id, saga, saga_version, lineage, parent_id, parent_seq, status,
                                        context, runnable_at, priority, ordering_key)
              SELECT x.id, x.message_id, x.saga, x.version, coalesce(?::uuid[], ARRAY[x.message_id]) || ARRAY[x.id],
                     ?::uuid,
                     ?::int, 'RUNNABLE', x.context, coalesce(x.due, {now}), coalesce(x.priority, 0), x.okey
                FROM (SELECT {schema}.uuid_v7() AS id, written.id AS message_id, reg.saga, reg.version,
                             written.context, written.due, written.priority, written.okey
                        FROM written JOIN {schema}.saga_registration reg ON reg.topic = written.topic
                       ORDER BY written.n, reg.saga) x
              RETURNING saga
            ), quiet AS ( -- the sagas this engine wakes itself: their runs due now notify nobody (schema version 9)
              SELECT set_config('coop.local_sagas', ?, true)
            )
            SELECT saga, count(*)::int FROM runs, quiet GROUP BY saga
            UNION ALL -- topics nobody handles come back as '#topic' (saga names cannot start with '#')
            SELECT DISTINCT '#' || written.topic, 0 FROM written
             WHERE NOT EXISTS (SELECT 1 FROM {schema}.saga_registration r WHERE r.topic = written.topic)
            UNION ALL -- keys already taken come back as '!', with the message's ordinal
            SELECT '!', n::int FROM duplicate
            """;

    /**
     * Emit of one message without an idempotency key or an ordering key (a client's launch, a step that launches one
     * child): {@link #EMIT} with scalar parameters, without its arrays and its key handling. Returns the same rows.
     * Parameters: id, topic, payload, {now}, id, saga, engine, step, scope, id, context, id, scope, id, parent id,
     * parent seq, context, due, {now}, priority, topic, local sagas, topic, topic.
     */
    static final String EMIT_ONE = """
            WITH msg AS (
              INSERT INTO {schema}.message (id, topic, payload, created_at) VALUES (?::uuid, ?, ?::jsonb, {now})
            ), emitted AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, context)
              VALUES (?::uuid, 'EMITTED', ?, ?, ?, coalesce(?::uuid[], ARRAY[?::uuid]), ?)
            ), runs AS (
              INSERT INTO {schema}.run (id, message_id, saga, saga_version, lineage, parent_id, parent_seq, status,
                                        context, runnable_at, priority)
              SELECT x.id, ?::uuid, x.saga, x.version, coalesce(?::uuid[], ARRAY[?::uuid]) || ARRAY[x.id], ?::uuid,
                     ?::int, 'RUNNABLE', ?, coalesce(?::timestamptz, {now}), ?::int
                FROM (SELECT {schema}.uuid_v7() AS id, reg.saga, reg.version
                        FROM {schema}.saga_registration reg WHERE reg.topic = ? ORDER BY reg.saga) x
              RETURNING saga
            ), quiet AS (
              SELECT set_config('coop.local_sagas', ?, true)
            )
            SELECT saga, count(*)::int FROM runs, quiet GROUP BY saga
            UNION ALL
            SELECT '#' || ?::text, 0 WHERE NOT EXISTS (SELECT 1 FROM {schema}.saga_registration r WHERE r.topic = ?)
            """;

    /**
     * The advance's setting of {@code status} (one parameter) and of {@code runnable_at} (seven parameters), which
     * {@link #quiet} removes.
     */
    private static final String SET_STATUS = "SET status = ?, ";
    private static final String SET_RUNNABLE_AT = """
            runnable_at = CASE WHEN ?::timestamptz IS NOT NULL THEN greatest(?::timestamptz, {now})
                               WHEN ?::bigint = 0 AND status = 'RUNNABLE' AND ?::text = 'RUNNABLE'
                               THEN runnable_at -- unchanged keeps the update HOT (no index writes)
                               ELSE {now} + ? * interval '1 millisecond' END,""";

    /**
     * An advance (any of its forms, with what follows it in the round trip) that leaves the run's {@code status} and
     * {@code runnable_at} out of its {@code SET}: for a runnable run that stays runnable now, whose update would set
     * both to what they are. The run's update triggers ({@code AFTER UPDATE OF status[, runnable_at]}) are then not
     * even considered: PostgreSQL otherwise compiles their {@code WHEN} for the statement, only to find it false
     * (schema version 18). The caller binds neither setting's parameters. {@code advance} is as sent (its schema
     * and {@code {now}} replaced).
     */
    static String quiet(SchemaName schema, String advance) {
        String setRunnableAt = schema.sql(SET_RUNNABLE_AT);
        String quiet = advance.replace(SET_STATUS, "SET ").replace(setRunnableAt, "");
        if (quiet.length() != advance.length() - SET_STATUS.length() + "SET ".length() - setRunnableAt.length()) {
            throw new IllegalStateException("not an advance: " + advance);
        }
        return quiet;
    }

    /** The advance's own part: its parameters come first in both forms. Ends after its last CTE. */
    private static final String ADVANCE_RUN = """
            WITH events AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at, context,
                                          step_seq, instance, iteration)
              SELECT ?, e.type, ?, ?, e.step, ?, e.exception::jsonb, ?, e.context, i.seq, i.instance, i.iteration
                FROM unnest(?::text[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS e(type, step, exception, context, n)
                LEFT JOIN (SELECT ?::int AS seq, ?::int AS instance, ?::int AS iteration) i ON e.n = 1 -- the SUSPENDED
               ORDER BY e.n
              RETURNING 1
            ), advanced AS (
              UPDATE {schema}.run
                 SET status = ?, phase = ?, step_index = ?, next_step = ?,
                     final_step = nullif(coalesce(?, final_step), ''), steps_done = ?,
                     iterations = coalesce(?::int[], iterations),
                     attempt = ?, pending_children = ?,
                     failed_children = CASE WHEN ? THEN failed_children ELSE 0 END,
                     waiting_since = CASE WHEN ?::int = 0 THEN NULL ELSE coalesce(waiting_since, {now}) END,
                     rollback_seq = ?, rollback_stage = ?, rollback_cause = ?::jsonb, resolution = NULL,
                     {runnableAt}
                     context = ?,
                     result = coalesce(?, result),
                     finally_done = CASE WHEN ?::int IS NULL THEN finally_done ELSE finally_done || ?::int END,
                     started_at = coalesce(started_at, ?),
                     finished_at = CASE WHEN ? THEN {now} END, failure = ?::jsonb, retries = 0,
                     reserved_until = {reserve}, version = version + 1
               WHERE id = ? AND CASE WHEN pg_current_xact_id() = ?::xid8 THEN true ELSE {schema}.claim_lost() END
                 AND CASE WHEN ? AND EXISTS (SELECT 1 FROM {schema}.cancellation x
                                                         WHERE x.scope_id = ANY(lineage))
                                     THEN {schema}.assert_not_cancelled(lineage) ELSE true END
                 AND set_config('coop.local_sagas', ?, true) IS NOT NULL -- woken in-process: no NOTIFY for them
            )
            """
            .replace("{runnableAt}", SET_RUNNABLE_AT);

    /**
     * Advance: append the run's events, set its new state and, when it finished, count it off at its parent. The
     * parent becomes runnable when its last child finishes (the step barrier as a counter). On the happy path the
     * update first asserts that the run's scope was not cancelled meanwhile (SQLSTATE CP001 otherwise).
     */
    static final String ADVANCE = Sql.ADVANCE_RUN + ", " + Sql.COUNT_OFF_PARENT.formatted(
            "AND (SELECT count(*) FROM events) >= 0");

    /**
     * Advance of a run with no parent to count off (it did not finish, or it has no awaited parent): the same
     * statement without the parent's update and COMMITTED insert, which would find nothing but still cost their
     * planning and executor set-up on every step. Returns the same (empty) result as {@link #ADVANCE}.
     */
    static final String ADVANCE_ALONE = Sql.ADVANCE_RUN + """
            SELECT NULL::uuid AS id, NULL::text AS saga, NULL::text AS status, NULL::uuid AS message_id,
                   NULL::uuid AS parent_id
             WHERE false
            """;

    /**
     * What {@code {reserve}} of an advance becomes: nothing reserved, or (the advance of a continuation, whose
     * reclaim follows in the same round trip) the run reserved for its worker for a moment, so that other workers'
     * claims by saga leave it alone in the gap between the commit and the reclaim (schema version 15).
     */
    static final String NOT_RESERVED = "NULL";
    static final String RESERVED = "clock_timestamp() + interval '" + Store.RESERVATION_MILLIS + " milliseconds'";

    /**
     * The claim by saga's condition on the reservation: a run reserved for a worker that continues it is skipped
     * until the reservation lapses. Read from the row found (no index), so it adds no probe.
     */
    static final String NOT_RESERVED_NOW = "(r.reserved_until IS NULL OR r.reserved_until < clock_timestamp())";

    /**
     * Counting a finished run off at its parent (the step barrier as a counter): the parent becomes runnable when its
     * last child finished; or, when the parent had already run its last step and every child committed, the parent
     * commits right here (its COMMITTED is written by this transaction), and the caller counts it off at its own
     * parent in turn: the parent id returned is null when there is none to count off at (no parent, or one that
     * stopped awaiting it). Parameters: the child's final status four times, the parent id, the engine, the start time.
     * Expressions read the parent row as updated (so concurrent siblings are seen), never a snapshot of it.
     */
    private static final String COUNT_OFF_PARENT = """
            parent AS (
              UPDATE {schema}.run p
                 SET pending_children = p.pending_children - 1,
                     failed_children = p.failed_children + CASE WHEN p.phase = 'ROLLBACK'
                                                                THEN (?::text = 'ROLLBACK_FAILED')::int
                                                                ELSE (?::text <> 'COMMITTED')::int END,
                     status = CASE WHEN p.pending_children > 1 THEN p.status
                                   WHEN p.final_step IS NOT NULL AND p.phase = 'HAPPY' AND p.failed_children = 0
                                        AND ?::text = 'COMMITTED'
                                        AND NOT EXISTS (SELECT 1 FROM {schema}.cancellation x
                                                         WHERE x.scope_id = ANY(p.lineage))
                                   THEN 'COMMITTED' ELSE 'RUNNABLE' END,
                     finished_at = CASE WHEN p.pending_children = 1 AND p.final_step IS NOT NULL
                                         AND p.phase = 'HAPPY' AND p.failed_children = 0 AND ?::text = 'COMMITTED'
                                         AND NOT EXISTS (SELECT 1 FROM {schema}.cancellation x
                                                          WHERE x.scope_id = ANY(p.lineage))
                                        THEN {now} ELSE p.finished_at END,
                     runnable_at = CASE WHEN p.pending_children = 1 THEN {now} ELSE p.runnable_at END,
                     version = p.version + 1
               WHERE p.id = ?::uuid AND p.status IN ('WAITING', 'RUNNABLE') AND p.pending_children > 0
              RETURNING p.id, p.saga, p.status, p.message_id, p.lineage, p.parent_id, p.awaited, p.final_step
            ), parent_committed AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, started_at)
              SELECT message_id, 'COMMITTED', saga, ?, final_step, lineage, ? FROM parent WHERE status = 'COMMITTED'
                     %s
            )
            """ + Sql.COUNT_OFF_RESULT + "\n";

    /**
     * What the count-off returns: the parent, and the parent's own parent to count it off at when it committed here
     * (null when it has none, or when that parent stopped awaiting it).
     */
    public static final String COUNT_OFF_RESULT = "SELECT id, saga, status, message_id, CASE WHEN awaited THEN parent_id END FROM parent";

    /**
     * The count-off of {@link #COUNT_OFF} for a parent named by an SQL expression of the enclosing statement (an
     * external task settled by a client: its run's parent) instead of a bind parameter; ends with the same SELECT.
     * {@code after}: a condition of the parent's COMMITTED insert that makes it run after the statement's own events
     * (so that the log shows the child's end first).
     */
    public static String countOffParentOf(String parentId, String after) {
        String sql = COUNT_OFF_PARENT.replace("WHERE p.id = ?::uuid", "WHERE p.id = " + parentId);
        if (sql.equals(COUNT_OFF_PARENT)) {
            throw new IllegalStateException("the count-off no longer names its parent by a parameter");
        }
        return sql.formatted(after);
    }

    /** Counts a run that finished without an advance of its own (a parent committed by its last child) off. */
    static final String COUNT_OFF = "WITH " + COUNT_OFF_PARENT.formatted("");

    /**
     * Rolling back a step instance: log a ROLLBACK_EMITTED for each message it launched and ask every committed run
     * of those messages to roll back (each starts with its own ROLLING_BACK when claimed). Runs that already
     * rolled back are left alone. Returns the woken runs per saga.
     */
    static final String REQUEST_CHILD_ROLLBACKS = """
            WITH targets AS (
              SELECT r.id, r.message_id, r.status FROM {schema}.run r WHERE r.parent_id = ? AND r.parent_seq = ?
            ), emitted AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception)
              SELECT m.message_id, 'ROLLBACK_EMITTED', ?, ?, ?, ?::uuid[], ?::jsonb
                FROM (SELECT DISTINCT message_id FROM targets) m ORDER BY m.message_id
            ), woken AS (
              UPDATE {schema}.run r
                 SET phase = 'ROLLBACK', status = 'RUNNABLE', rollback_stage = 'START', parent_context = ?, awaited = true,
                     rollback_seq = r.steps_done - 1, rollback_cause = ?::jsonb, runnable_at = {now},
                     finished_at = NULL, pending_children = 0, failed_children = 0, version = r.version + 1
                FROM targets t
               WHERE r.id = t.id AND t.status = 'COMMITTED' AND r.saga <> '~external-task' -- see ExternalTasks
              RETURNING r.saga
            )
            SELECT saga, count(*)::int FROM woken GROUP BY saga
            """;

    static final String POSTPONE = """
            UPDATE {schema}.run
               SET runnable_at = {now} + ? * interval '1 millisecond', retries = retries + 1,
                   version = version + 1,
                   started_at = CASE WHEN ? THEN coalesce(started_at, {now}) ELSE started_at END
             WHERE id = ? AND status = 'RUNNABLE' AND version = ?
               AND CASE WHEN ?::xid8 IS NULL OR pg_current_xact_id() = ?::xid8 THEN true -- under the claim's lock:
                        ELSE {schema}.claim_lost() END                                 -- in the claim's transaction
            """;

    /** Parks a runnable run that met database trouble too often in a row, if nobody moved it meanwhile. */
    static final String PARK_AFTER_RETRIES = """
            UPDATE {schema}.run
               SET status = 'PARKED', failure = ?::jsonb, retries = retries + 1, version = version + 1
             WHERE id = ? AND status = 'RUNNABLE' AND version = ?
            """;

    /** The runs caused by the given step instances of a run, with their results or failures. */
    static final String CHILD_RESULTS = """
            SELECT r.id, r.message_id, r.saga, r.status, r.result, r.failure::text
              FROM {schema}.run r
             WHERE r.parent_id = ? AND r.parent_seq = ANY(?::int[])
             ORDER BY r.parent_seq, r.created_at, r.saga
            """;

    /** How many awaited runs caused by a step instance have not started yet. */
    static final String COUNT_UNSTARTED = """
            SELECT count(*)::int FROM {schema}.run
             WHERE parent_id = ? AND parent_seq = ? AND started_at IS NULL AND status IN ('RUNNABLE', 'HELD')
               AND awaited
            """;

    /**
     * Stops awaiting the runs caused by a step instance that have not started; runs being started right now (locked)
     * count as started. Returns how many.
     */
    static final String DETACH_UNSTARTED = """
            WITH d AS (
              SELECT id FROM {schema}.run
               WHERE parent_id = ? AND parent_seq = ? AND started_at IS NULL AND status IN ('RUNNABLE', 'HELD')
                 AND awaited
               FOR UPDATE SKIP LOCKED
            ), detached AS (
              UPDATE {schema}.run r SET awaited = false, version = r.version + 1 FROM d WHERE r.id = d.id RETURNING 1
            )
            SELECT count(*)::int FROM detached
            """;

    /**
     * A waiting parent gave up: the awaited runs caused by its step instance that have not started (and are not
     * being started right now: locked rows count as started) are settled without running. They end ROLLED_BACK
     * (nothing of theirs ran, so nothing is compensated) with a ROLLING_BACK carrying the reason and a ROLLED_BACK,
     * written by the parent's engine; they never run later. Returns their ids and messages.
     */
    static final String SETTLE_UNSTARTED = """
            WITH d AS (
              SELECT id FROM {schema}.run
               WHERE parent_id = ? AND parent_seq = ? AND started_at IS NULL
                 AND status IN ('RUNNABLE', 'PARKED', 'HELD', 'WAITING') AND awaited -- WAITING: an external task
               ORDER BY id
               FOR UPDATE SKIP LOCKED
            ), settled AS (
              UPDATE {schema}.run r
                 SET status = 'ROLLED_BACK', phase = 'ROLLBACK', failure = ?::jsonb, finished_at = {now},
                     version = r.version + 1
                FROM d WHERE r.id = d.id
              RETURNING r.id, r.message_id, r.saga, r.lineage
            ), logged AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, lineage, exception)
              SELECT s.message_id, e.type, s.saga, ?, s.lineage, e.exception::jsonb
                FROM settled s
               CROSS JOIN (VALUES (1, 'ROLLING_BACK', ?::text), (2, 'ROLLED_BACK', NULL::text))
                       AS e(n, type, exception)
               ORDER BY s.id, e.n
            ), tasks AS ( -- external tasks among them: timed out when the reason is a deadline, else cancelled
              UPDATE {schema}.external_task t
                 SET state = CASE WHEN ?::jsonb #>> '{causes,0,type}' LIKE '%DeadlineMissedException'
                                  THEN 'TIMED_OUT' ELSE 'CANCELLED' END,
                     settled_at = {now}, settled_by = 'coop'
                FROM settled s WHERE t.run_id = s.id AND t.state = 'OPEN'
            ), counted AS ( -- they did not commit: failures of the parent's step, like any child that rolled back
              UPDATE {schema}.run p SET failed_children = p.failed_children + (SELECT count(*)::int FROM settled)
               WHERE p.id = ? AND EXISTS (SELECT 1 FROM settled)
            )
            SELECT id, message_id FROM settled
            """;

    static final String CHILD_FAILURES = """
            SELECT status, coalesce(failure, '{}'::jsonb)::text
              FROM {schema}.run
             WHERE parent_id = ? AND parent_seq = ? AND status <> 'COMMITTED' AND awaited
             ORDER BY created_at
            """;

    /**
     * The claim's condition on {@code r.priority}: every priority, highest first, in the index condition. With it
     * PostgreSQL walks {@code run_runnable (saga, priority DESC, runnable_at)} once per priority present and stops at
     * the first due run, instead of reading every run of a higher priority that is not due yet.
     */
    static final String EVERY_PRIORITY = java.util.stream.IntStream
            .rangeClosed(Limits.MIN_PRIORITY, Limits.MAX_PRIORITY)
            .map(p -> Limits.MAX_PRIORITY + Limits.MIN_PRIORITY - p)
            .mapToObj(String::valueOf)
            .collect(java.util.stream.Collectors.joining(", ", "r.priority IN (", ")"));

    /**
     * {@code {now}} for a bound on {@code runnable_at} that an index can use: {@code statement_timestamp()} is stable
     * within the statement, where {@code clock_timestamp()} is volatile and can only filter row by row (the claim
     * then read every run not due yet, of higher priorities and, when nothing was due, all of them). The statement's
     * start is microseconds before the clock reading; a run due in between is claimed next time. One bind
     * parameter, as {@code {now}}.
     */
    static final String DUE_NOW = "coalesce(?::timestamptz, statement_timestamp())";

    /**
     * Probe: per saga version, milliseconds until its earliest runnable run is due, and until the earliest one due in
     * the future (which the first hides when it is due now). The claiming index is ordered by version, then priority,
     * so the priorities present are found by skipping from one to the next ({@code levels}, one index probe each),
     * then two index probes per priority present: with no priorities set, four probes per saga version. Runs of
     * versions the engine does not have are not looked at: it could not claim them.
     */
    static final String PROBE = """
            WITH RECURSIVE levels(saga, version, p) AS (
              SELECT s.saga, s.version, (SELECT max(r.priority) FROM {schema}.run r
                                          WHERE r.saga = s.saga AND r.saga_version = s.version
                                            AND r.status = 'RUNNABLE')
                FROM unnest(?::text[], ?::int[]) AS s(saga, version)
              UNION ALL
              SELECT l.saga, l.version, (SELECT max(r.priority) FROM {schema}.run r
                                          WHERE r.saga = l.saga AND r.saga_version = l.version
                                            AND r.status = 'RUNNABLE' AND r.priority < l.p)
                FROM levels l WHERE l.p IS NOT NULL
            )
            SELECT l.saga, floor(extract(epoch FROM (min(d.due) - {now})) * 1000)::bigint,
                   ceil(extract(epoch FROM (min(f.due) - {now})) * 1000)::bigint
              FROM levels l
              CROSS JOIN LATERAL (SELECT min(r.runnable_at) AS due FROM {schema}.run r
                                   WHERE r.saga = l.saga AND r.saga_version = l.version AND r.status = 'RUNNABLE'
                                     AND r.priority = l.p) d
              CROSS JOIN LATERAL (SELECT min(r.runnable_at) AS due FROM {schema}.run r
                                   WHERE r.saga = l.saga AND r.saga_version = l.version AND r.status = 'RUNNABLE'
                                     AND r.priority = l.p AND r.runnable_at > %s) f
             WHERE l.p IS NOT NULL
             GROUP BY l.saga
            """
            .formatted(DUE_NOW);

    /** The statuses of a message's runs as readers show them: RUNNABLE while awaiting children is WAITING. */
    static final String RUN_STATUSES = """
            SELECT CASE WHEN status = 'RUNNABLE' AND pending_children > 0 THEN 'WAITING' ELSE status END
              FROM {schema}.run WHERE message_id = ?
            """;

    /** The log of a message's hierarchy: its EMITTED, then everything its runs and their descendants wrote. */
    static final String EVENTS = """
            WITH target AS (
              SELECT lineage FROM {schema}.event WHERE message_id = ?::uuid AND type = 'EMITTED' LIMIT 1
            )
            SELECT ev.id, ev.message_id, ev.type, ev.saga, ev.engine, ev.step, ev.lineage, ev.created_at,
                   ev.started_at, ev.exception::text AS exception, ev.context::text AS context, ev.attempt
              FROM {schema}.event ev, target t
             WHERE ev.lineage[1] = t.lineage[1]
               AND (ev.lineage[1] = ?::uuid
                    OR (ev.message_id = ?::uuid AND ev.type = 'EMITTED')
                    OR EXISTS (SELECT 1 FROM {schema}.run r
                                WHERE r.message_id = ?::uuid AND ev.lineage[1:cardinality(r.lineage)] = r.lineage))
               AND ev.id > ?
             ORDER BY ev.id
             LIMIT ?
            """;
}
