package dev.coop.internal.store;

/**
 * The SQL of a claim: the claim and the reclaim of a continuation, their conditions, and the step-log reads that
 * complete a claim. {@code {schema}} is replaced by the validated schema name.
 */
public final class ClaimSql {
    private ClaimSql() {
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
     * When a claim locked its run ({@code claimed_at}: the step's start, recorded as its events' {@code started_at}):
     * the database's clock after the lock, not the statement's start, so that the spans of steps in the log never
     * overlap where their locks did not (a claim may wait for a lock or a slot). Read in a {@code SELECT}, never in an
     * {@code UPDATE}; one bind parameter, as {@code {now}}.
     */
    public static final String CLAIMED_AT = "coalesce(?::timestamptz, clock_timestamp())";

    /**
     * Claim: lock one runnable run (skipping rows other engines hold), write its SEEN if this is its first step, and
     * look up a cancellation of any scope above it (a primary-key probe per lineage element). The lock is held by
     * the transaction until it commits; a crashed engine's lock dies with its connection. {@code %s} is the
     * selection (by saga and due time, or by run id). The newest step instances (the step log: the events that carry
     * a {@code step_seq}, schema version 23) are read with the statement's snapshot, which may predate the commit of the run version it locked: the caller checks that they
     * reach {@code steps_done - 1} (and that the instance being rolled back was seen) and reads them again if not.
     * Sent for the claims of a limited saga (inside {@link LimitedClaim}) and the reclaims of a run by id; a saga
     * without limits is claimed in two smaller statements ({@link #CLAIM_LOCK}, {@link SplitClaim}).
     */
    static final String CLAIM = """
            WITH claimed AS (
              SELECT r.id, r.root_id, r.saga, r.saga_version, r.message_id, r.lineage, r.parent_id, r.phase = 'ROLLBACK' AS rollback, r.step_index,
                     r.next_step,
                     r.steps_done, r.iterations, r.attempt, r.started_at IS NOT NULL AS started, r.failed_children,
                     r.rollback_seq, r.rollback_stage, r.rollback_cause::text AS rollback_cause, r.resolution, r.retries,
                     r.version, r.context, r.parent_context, r.finally_done, r.pending_children, r.awaited,
                     r.waiting_since, r.runnable_at, {claimedAt} AS claimed_at, r.cancel_from, r.ordering_key
                FROM {schema}.run r
               WHERE %s
               LIMIT 1
               FOR UPDATE SKIP LOCKED
            ), me AS (
              SELECT ?::text AS engine
            ), seen AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, lineage, root_id)
              SELECT c.message_id, 'SEEN', c.saga, me.engine, c.lineage, c.root_id FROM claimed c, me -- a step that ran COMMIT
               WHERE NOT started AND {schema}.seen_missing(c.message_id, c.saga) -- itself made its SEEN durable (V16)
            )
            SELECT c.*, m.topic, m.payload::text AS payload, m.created_at AS message_created_at,
                   set_config('application_name', {runningAs} || me.engine, true) AS running_as, -- see RUNNING_AS
                   t.recent, t.recent_top, rs.instance AS rollback_instance, rs.iteration AS rollback_iteration,
                   (SELECT x.failure::text FROM {schema}.cancellation x -- the scopes that reach it (version 24)
                     WHERE x.root_id = c.root_id AND x.scope_id = ANY(c.lineage[coalesce(c.cancel_from, 1):])
                     ORDER BY cardinality(x.lineage) LIMIT 1) AS cancellation,
                   pg_current_xact_id()::text AS xact, {idleInTransaction} AS idle_in_transaction
              FROM claimed c CROSS JOIN me JOIN {schema}.message m ON m.root_id = c.root_id AND m.id = c.message_id
              LEFT JOIN LATERAL (SELECT array_agg(s.instance ORDER BY s.step_seq DESC) AS recent,
                                        max(s.step_seq) AS recent_top
                                   FROM (SELECT e.step_seq, e.instance FROM {schema}.event e -- index event_message
                                          WHERE NOT c.rollback -- a one-time filter: no scan on the rollback path
                                            AND e.root_id = c.root_id AND e.message_id = c.message_id
                                            AND e.saga = c.saga
                                            AND e.step_seq < c.steps_done
                                          ORDER BY e.step_seq DESC LIMIT %d) s) t ON NOT c.rollback
              LEFT JOIN LATERAL (SELECT e.instance, e.iteration FROM {schema}.event e
                                  WHERE c.rollback -- a one-time filter: no probe on the happy path
                                    AND e.root_id = c.root_id AND e.message_id = c.message_id AND e.saga = c.saga
                                    AND e.step_seq = c.rollback_seq
                                  LIMIT 1) rs ON c.rollback
            """
            .replace("%d", String.valueOf(StepHistory.RECENT)).replace("{runningAs}", "'" + RUNNING_AS + "'")
            .replace("{claimedAt}", CLAIMED_AT);

    /**
     * The claim of one run by saga, in small statements (issue 37): this first one only locks the run by
     * {@code run_runnable} and returns its row, the cancellation of any scope above it, the claim's time and the
     * transaction id, as {@link #RECLAIM_CONTINUATION} does for a continuation. What else the claim needs (the
     * message, the run's SEEN, the step log) is written and read by one more statement chosen by what this one
     * returned ({@link #CLAIMED_SEEN}, {@link #CLAIMED_RECENT}, {@link #CLAIMED_ROLLBACK}): a new statement takes a
     * snapshot after this one's lock, so it reads the log as of the lock without {@code seen_missing} and without
     * reading it again. {@code %s} is the selection. Parameters: {now} (the claim's time), the engine, then the
     * selection's.
     */
    static final String CLAIM_LOCK = """
            SELECT r.id, r.root_id, r.saga, r.saga_version, r.message_id, r.lineage, r.parent_id, r.phase = 'ROLLBACK' AS rollback, r.step_index,
                   r.next_step, r.steps_done, r.iterations, r.attempt, r.started_at IS NOT NULL AS started,
                   r.failed_children, r.rollback_seq, r.rollback_stage, r.rollback_cause::text AS rollback_cause,
                   r.resolution, r.retries, r.version, r.context, r.parent_context, r.finally_done, r.pending_children,
                   r.awaited, r.waiting_since, r.runnable_at, {claimedAt} AS claimed_at, r.cancel_from, r.ordering_key,
                   set_config('application_name', {runningAs} || ?::text, true) AS running_as, -- see RUNNING_AS
                   (SELECT x.failure::text FROM {schema}.cancellation x -- the scopes that reach it (version 24)
                     WHERE x.root_id = r.root_id AND x.scope_id = ANY(r.lineage[coalesce(r.cancel_from, 1):])
                     ORDER BY cardinality(x.lineage) LIMIT 1) AS cancellation,
                   pg_current_xact_id()::text AS xact, {idleInTransaction} AS idle_in_transaction
              FROM {schema}.run r
             WHERE %s
             LIMIT 1
             FOR UPDATE SKIP LOCKED
            """
            .replace("{runningAs}", "'" + RUNNING_AS + "'").replace("{claimedAt}", CLAIMED_AT);

    /** The columns every statement that completes a {@link #CLAIM_LOCK} returns, in this order. */
    static final String CLAIMED_MESSAGE = "m.topic, m.payload::text AS payload, m.created_at";

    /**
     * Completes the claim of a run that has not started: writes its SEEN unless the log has one (a step that ran
     * {@code COMMIT} itself made its claim's SEEN durable, schema version 16; this statement's snapshot is taken after
     * the lock, so a plain {@code NOT EXISTS} sees it) and reads its message. Parameters: message id, saga, engine,
     * lineage, root; message id, saga (the test, by {@code event_message}: a test by {@code root_id} too lets a
     * generic plan pick {@code event_root}, every event of the hierarchy); root, message id (the message).
     */
    static final String CLAIMED_SEEN = """
            WITH seen AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, lineage, root_id)
              SELECT ?::uuid, 'SEEN', ?, ?, ?::uuid[], ?::uuid
               WHERE NOT EXISTS (SELECT 1 FROM {schema}.event e -- event_message, as seen_missing reads it
                                  WHERE e.message_id = ?::uuid AND e.saga = ? AND e.type = 'SEEN')
            )
            SELECT {message}, NULL::int[] AS recent, NULL::int AS recent_top,
                   NULL::int AS rollback_instance, NULL::int AS rollback_iteration
              FROM {schema}.message m WHERE m.root_id = ?::uuid AND m.id = ?::uuid
            """
            .replace("{message}", CLAIMED_MESSAGE);

    /**
     * Completes the claim of a started run on the happy path: its message and its newest step instances before
     * {@code steps_done} (a backward walk of {@code event_message} that stops after {@link StepHistory#RECENT}).
     * Parameters: root, message id, saga, steps done; root, message id.
     */
    static final String CLAIMED_RECENT = """
            SELECT {message}, t.recent, t.recent_top, NULL::int AS rollback_instance, NULL::int AS rollback_iteration
              FROM {schema}.message m,
                   (SELECT array_agg(s.instance ORDER BY s.step_seq DESC) AS recent, max(s.step_seq) AS recent_top
                      FROM (SELECT e.step_seq, e.instance FROM {schema}.event e -- index event_message
                             WHERE e.root_id = ?::uuid AND e.message_id = ?::uuid AND e.saga = ? AND e.step_seq < ?
                             ORDER BY e.step_seq DESC LIMIT %d) s) t
             WHERE m.root_id = ?::uuid AND m.id = ?::uuid
            """.replace("{message}", CLAIMED_MESSAGE).replace("%d", String.valueOf(StepHistory.RECENT));

    /**
     * Completes the claim of a started run that rolls back: its message and the instance being rolled back (one
     * probe of {@code event_message}). Parameters: root, message id, saga, rollback seq; root, message id.
     */
    static final String CLAIMED_ROLLBACK = """
            SELECT {message}, NULL::int[] AS recent, NULL::int AS recent_top,
                   rs.instance AS rollback_instance, rs.iteration AS rollback_iteration
              FROM {schema}.message m
              LEFT JOIN (SELECT e.instance, e.iteration FROM {schema}.event e
                          WHERE e.root_id = ?::uuid AND e.message_id = ?::uuid AND e.saga = ? AND e.step_seq = ?
                          LIMIT 1) rs ON true
             WHERE m.root_id = ?::uuid AND m.id = ?::uuid
            """.replace("{message}", CLAIMED_MESSAGE);

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
                   r.waiting_since, r.runnable_at, {claimedAt},
                   (SELECT x.failure::text FROM {schema}.cancellation x
                     WHERE x.root_id = r.root_id AND x.scope_id = ANY(r.lineage[coalesce(r.cancel_from, 1):])
                     ORDER BY cardinality(x.lineage) LIMIT 1),
                   pg_current_xact_id()::text, {idleInTransaction},
                   set_config('application_name', {runningAs} || ?::text, true) -- as the claim does
              FROM {schema}.run r
             WHERE r.root_id = ? AND r.id = ? AND r.version = ? AND r.status = 'RUNNABLE' AND r.phase = 'HAPPY'
               AND r.runnable_at <= {now}
               FOR UPDATE SKIP LOCKED
            """.replace("{runningAs}", "'" + RUNNING_AS + "'").replace("{claimedAt}", CLAIMED_AT);

    /**
     * The claim by saga's condition on the reservation: a run reserved for a worker that continues it is skipped
     * until the reservation lapses. Read from the row found (no index), so it adds no probe. Reservations are on the
     * database's clock ({@link AdvanceSql#RESERVED}), read as the statement's start: stable, not volatile.
     */
    static final String NOT_RESERVED_NOW = "(r.reserved_until IS NULL OR r.reserved_until < statement_timestamp())";

    /**
     * The claim's condition on {@code r.priority}: every priority, highest first, in the index condition. With it
     * PostgreSQL walks {@code run_runnable (saga, priority DESC, runnable_at)} once per priority present and stops at
     * the first due run, instead of reading every run of a higher priority that is not due yet.
     */
    static final String EVERY_PRIORITY = java.util.stream.IntStream
            .rangeClosed(InputLimits.MIN_PRIORITY, InputLimits.MAX_PRIORITY)
            .map(p -> InputLimits.MAX_PRIORITY + InputLimits.MIN_PRIORITY - p)
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
}
