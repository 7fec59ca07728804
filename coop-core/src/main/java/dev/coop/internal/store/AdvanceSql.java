package dev.coop.internal.store;

/**
 * The SQL of an advance: the advance in its forms, its quiet form, the count-off at the parent, and the postponing
 * and parking of a run that met database trouble. {@code {schema}} is replaced by the validated schema name.
 */
public final class AdvanceSql {
    private AdvanceSql() {
    }

    /**
     * The part of a run's lineage whose cancellations reach it (schema version 24): from {@code cancel_from} on, so
     * that a run launched by a rollback, and the runs below it, are not reached by a cancellation of a scope above it
     * (the one its rollback answers). {@code alias}: the run's table alias with its dot, or empty.
     */
    private static String cancelScope(String alias) {
        return alias + "lineage[coalesce(" + alias + "cancel_from, 1):]";
    }

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

    /**
     * The advance's guard, the first of its statements: the claim's check (its transaction is still this one, else
     * {@code claim_lost()}: CP002), the cancellation's (CP001; under the hierarchy's operator lock, {@code
     * commit_allowed}, when {@link AdvanceBinding#excludesCancellation}), and the wake-up of a run left due later for
     * the other engines (schema version 27). A {@code SELECT}, where a function may raise: the updates that follow call
     * none (docs/scaling.md), and a failed guard keeps every later statement of the round trip, its {@code COMMIT}
     * included, from running. Returns no row, in the shape of {@link #COUNT_OFF_RESULT} (the advance without a
     * count-off returns nothing). The functions are evaluated in the subquery's target list (kept, being volatile)
     * for the one row the run's key finds: none when the run is gone, as the update then matches nothing.
     */
    private static final String GUARD = """
            SELECT NULL::uuid AS id, NULL::text AS saga, NULL::text AS status, NULL::uuid AS message_id,
                   NULL::uuid AS parent_id, NULL::uuid AS root_id
              FROM (SELECT CASE WHEN pg_current_xact_id() = ?::xid8
                                THEN CASE WHEN ? THEN {schema}.commit_allowed(r.lineage[1], {cancelScope}, true)
                                          WHEN ? AND EXISTS (SELECT 1 FROM {schema}.cancellation x
                                                              WHERE x.scope_id = ANY({cancelScope}))
                                          THEN {schema}.assert_not_cancelled({cancelScope}) ELSE true END
                                ELSE {schema}.claim_lost() END AS allowed,
                           CASE WHEN ?::text IS NOT NULL -- due later (v27)
                                THEN (SELECT true FROM pg_notify('coop_{schema}', ?::text)) END AS notified
                      FROM {schema}.run r
                     WHERE r.root_id = ? AND r.id = ?
                    OFFSET 0) g
             WHERE g.allowed IS NULL AND g.notified IS NULL
            """.replace("{cancelScope}", cancelScope("r."));

    /**
     * The run's new state: by its key alone, with no function call (the guard before it checked the claim, whose
     * row lock this transaction holds, and the cancellation).
     */
    private static final String UPDATE_RUN = """
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
             WHERE root_id = ? AND id = ?
            """.replace("{runnableAt}", SET_RUNNABLE_AT);

    /** The run's events, a statement of their own (issue 37, decision 3: fewer relations than a CTE beside the update). */
    private static final String INSERT_EVENTS = """
            INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at, context,
                                        step_seq, instance, iteration, root_id)
            SELECT ?, e.type, ?, ?, e.step, ?, e.exception::jsonb, ?, e.context, i.seq, i.instance, i.iteration, ?::uuid
              FROM unnest(?::text[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS e(type, step, exception, context, n)
              LEFT JOIN (SELECT ?::int AS seq, ?::int AS instance, ?::int AS iteration) i ON e.n = 1 -- the SUSPENDED
             ORDER BY e.n
            """;

    /**
     * The advance's own part, three statements: the guard, the run's update, its events. Its parameters come first in
     * both forms ({@link AdvanceBinding}); its first result is the guard's (no row).
     */
    private static final String ADVANCE_RUN = GUARD + ";\n" + UPDATE_RUN + ";\n" + INSERT_EVENTS;

    /**
     * What {@code {reserve}} of an advance becomes: nothing reserved, or (the advance of a continuation, whose
     * reclaim follows in the same round trip) the run reserved for its worker for a moment, so that other workers'
     * claims by saga leave it alone in the gap between the commit and the reclaim (schema version 15).
     */
    static final String NOT_RESERVED = "NULL";
    static final String RESERVED = "statement_timestamp() + interval '" + Store.RESERVATION_MILLIS + " milliseconds'";

    /**
     * The parent's wake-up when its last child counted off (schema version 27): for the engines that run it, unless it
     * is a saga version the committing engine wakes itself ({@link Wakes}; one parameter, after the count-off's); and
     * when the parent committed here with an ordering key, the release of the key's next run ({@link KeyedRuns}). The
     * statement reads it ({@link #COUNT_OFF_RESULT}), and that sends it.
     */
    public static final String PARENT_WOKEN = """
            parent_woken AS ( -- the wake-up as Wakes.notifying writes it, spelled out: a constant
              SELECT (SELECT count(pg_notify('coop_{schema}',
                                             CASE WHEN w.runnable_at <= clock_timestamp() THEN w.saga
                                                  ELSE w.saga || ' ' || ceil(extract(epoch FROM (w.runnable_at
                                                                   - clock_timestamp())) * 1000)::bigint::text END))
                        FROM parent w
                       WHERE w.status = 'RUNNABLE' AND w.pending_children = 0
                         AND (w.runnable_at > clock_timestamp() OR w.saga || '@' || w.saga_version::text
                              <> ALL (coalesce(string_to_array(?, ','), '{}')))) AS notified,
                     (SELECT count(*) FROM parent w -- a keyed parent committed here releases its key (KeyedRuns)
                       WHERE CASE WHEN w.status = 'COMMITTED' AND w.ordering_key IS NOT NULL
                                  THEN {schema}.release_ordering_key_after(w.saga, w.ordering_key, ARRAY[w.id])
                                  ELSE false END) AS released
            )""";

    /**
     * Whether the parent commits when its last child counted off (an expression of parent {@code p}; one parameter,
     * the child's final status): it ran its last step, on the happy path, with no failed child, this child committed,
     * and its scope was not cancelled. The cancellation is read with the statement's snapshot, taken after the
     * hierarchy's operator lock that this transaction already holds (the guard's {@code commit_allowed}, or {@link
     * #COUNT_OFF_LOCK}): a cancellation deciding at the same time waits for this transaction, or committed before.
     */
    private static final String PARENT_COMMITS = """
            p.final_step IS NOT NULL AND p.phase = 'HAPPY' AND p.failed_children = 0 AND ?::text = 'COMMITTED'
                                        AND NOT EXISTS (SELECT 1 FROM {schema}.cancellation x
                                                         WHERE x.scope_id = ANY(p.lineage[coalesce(p.cancel_from, 1):]))""";

    /**
     * Counting a finished run off at its parent (the step barrier as a counter), with no function call: the parent
     * becomes runnable when its last child finished; or, when the parent had already run its last step and every
     * child committed ({@link #PARENT_COMMITS}), the parent commits right here (its COMMITTED is written by this
     * statement, after the child's events, which an earlier statement wrote), and the caller counts it off at its own
     * parent in turn: the parent id returned is null when there is none to count off at (no parent, or one that
     * stopped awaiting it). Parameters: the child's final status four times, the times, the root, the parent id, the
     * engine, the start time. Expressions read the parent row as updated (so concurrent siblings are seen).
     */
    private static final String COUNT_OFF_PARENT = """
            WITH parent AS (
              UPDATE {schema}.run p
                 SET pending_children = p.pending_children - 1,
                     failed_children = p.failed_children + CASE WHEN p.phase = 'ROLLBACK'
                                                                THEN (?::text = 'ROLLBACK_FAILED')::int
                                                                ELSE (?::text <> 'COMMITTED')::int END,
                     status = CASE WHEN p.pending_children > 1 THEN p.status
                                   WHEN {commits} THEN 'COMMITTED' ELSE 'RUNNABLE' END,
                     finished_at = CASE WHEN p.pending_children = 1 AND {commits} THEN {now} ELSE p.finished_at END,
                     runnable_at = CASE WHEN p.pending_children = 1 THEN {now} ELSE p.runnable_at END,
                     version = p.version + 1
               WHERE p.root_id = ?::uuid AND p.id = ?::uuid AND p.status IN ('WAITING', 'RUNNABLE')
                 AND p.pending_children > 0
              RETURNING p.id, p.saga, p.status, p.message_id, p.lineage, p.parent_id, p.awaited, p.final_step,
                        p.root_id
            ), parent_committed AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, started_at, root_id)
              SELECT message_id, 'COMMITTED', saga, ?, final_step, lineage, ?, root_id FROM parent
               WHERE status = 'COMMITTED'
            )
            SELECT id, saga, status, message_id, CASE WHEN awaited THEN parent_id END, root_id FROM parent
            """.replace("{commits}", PARENT_COMMITS);

    /**
     * After the count-off, its own statement (a {@code SELECT}, where functions belong): the parent's wake-up when it
     * is runnable with no child pending (schema version 27), for the engines that run it unless it is a saga version
     * the committing engine wakes itself ({@link Wakes}); and when the parent committed with an ordering key, the
     * release of the key's next run ({@link KeyedRuns}). It reads the parent as the count-off left it, not what the
     * count-off changed: a parent in that state that this transaction did not count off is one no child counts off at
     * (it awaits none), which a spare wake-up or release, both idempotent, leaves as it is. Parameters: the root and
     * the parent id, the local sagas, the root and the parent id.
     */
    static final String PARENT_NOTIFIED = """
            SELECT (SELECT count(pg_notify('coop_{schema}', {payload})) FROM {schema}.run w
                     WHERE w.root_id = ?::uuid AND w.id = ?::uuid AND w.status = 'RUNNABLE' AND w.pending_children = 0
                       AND {needed}) AS notified,
                   (SELECT count(*) FROM {schema}.run w -- a keyed parent committed here releases its key (KeyedRuns)
                     WHERE w.root_id = ?::uuid AND w.id = ?::uuid AND w.status = 'COMMITTED'
                       AND w.ordering_key IS NOT NULL
                       AND {schema}.release_ordering_key_after(w.saga, w.ordering_key, ARRAY[w.id])) AS released
            """.replace("{payload}", Wakes.payload("w")).replace("{needed}", Wakes.needed("w", "?::text"));

    /**
     * The hierarchy's operator lock before a count-off of its own ({@link #COUNT_OFF}: a parent committed by its last
     * child, counted off at its own parent), taken as the advance's guard takes it, so that the count-off's snapshot
     * postdates it: a no-op when this transaction holds it already (the commit of that child took it). Parameters:
     * the child's final status, the root.
     */
    private static final String COUNT_OFF_LOCK = """
            SELECT {schema}.commit_allowed(?::uuid, '{}'::uuid[], false) WHERE ?::text = 'COMMITTED'
            """;

    /**
     * The count-off of a parent in one statement, for a parent named by an SQL expression of an enclosing statement
     * ({@link #countOffParentOf}: an external task settled by a client), which decides whether the parent commits by
     * {@code commit_allowed} in the statement itself (its statement's snapshot predates the lock it takes).
     */
    private static final String COUNT_OFF_PARENT_IN_STATEMENT = """
            parent AS (
              UPDATE {schema}.run p
                 SET pending_children = p.pending_children - 1,
                     failed_children = p.failed_children + CASE WHEN p.phase = 'ROLLBACK'
                                                                THEN (?::text = 'ROLLBACK_FAILED')::int
                                                                ELSE (?::text <> 'COMMITTED')::int END,
                     status = CASE WHEN p.pending_children > 1 THEN p.status
                                   WHEN p.final_step IS NOT NULL AND p.phase = 'HAPPY' AND p.failed_children = 0
                                        AND ?::text = 'COMMITTED'
                                        AND {schema}.commit_allowed(p.lineage[1],
                                                                    p.lineage[coalesce(p.cancel_from, 1):], false)
                                   THEN 'COMMITTED' ELSE 'RUNNABLE' END,
                     finished_at = CASE WHEN p.pending_children = 1 AND p.final_step IS NOT NULL
                                         AND p.phase = 'HAPPY' AND p.failed_children = 0 AND ?::text = 'COMMITTED'
                                         AND {schema}.commit_allowed(p.lineage[1],
                                                                     p.lineage[coalesce(p.cancel_from, 1):], false)
                                        THEN {now} ELSE p.finished_at END,
                     runnable_at = CASE WHEN p.pending_children = 1 THEN {now} ELSE p.runnable_at END,
                     version = p.version + 1
               WHERE p.root_id = ?::uuid AND p.id = ?::uuid AND p.status IN ('WAITING', 'RUNNABLE')
                 AND p.pending_children > 0
              RETURNING p.id, p.saga, p.saga_version, p.status, p.message_id, p.lineage, p.parent_id, p.awaited,
                        p.final_step, p.pending_children, p.runnable_at, p.ordering_key, p.root_id
            ), parent_committed AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, started_at, root_id)
              SELECT message_id, 'COMMITTED', saga, ?, final_step, lineage, ?, root_id FROM parent
               WHERE status = 'COMMITTED'
                     %s
            ), """ + PARENT_WOKEN + "\n" + AdvanceSql.COUNT_OFF_RESULT + "\n";

    /**
     * What the count-off returns: the parent, and the parent's own parent to count it off at when it committed here
     * (null when it has none, or when that parent stopped awaiting it).
     */
    public static final String COUNT_OFF_RESULT = "SELECT id, saga, status, message_id, CASE WHEN awaited THEN parent_id END, root_id FROM parent, parent_woken";

    /**
     * The count-off of {@link #COUNT_OFF} for a parent named by an SQL expression of the enclosing statement (an
     * external task settled by a client: its run's parent) instead of a bind parameter; ends with the same SELECT.
     * {@code after}: a condition of the parent's COMMITTED insert that makes it run after the statement's own events
     * (so that the log shows the child's end first).
     */
    public static String countOffParentOf(String rootId, String parentId, String after) {
        String sql = COUNT_OFF_PARENT_IN_STATEMENT.replace("WHERE p.root_id = ?::uuid AND p.id = ?::uuid",
                "WHERE p.root_id = " + rootId + " AND p.id = " + parentId);
        if (sql.equals(COUNT_OFF_PARENT_IN_STATEMENT)) {
            throw new IllegalStateException("the count-off no longer names its parent by a parameter");
        }
        return sql.formatted(after);
    }

    /**
     * Counts a run that finished without an advance of its own (a parent committed by its last child) off: the lock,
     * the count-off, the wake-up; the count-off's is the second result.
     */
    static final String COUNT_OFF = COUNT_OFF_LOCK + ";\n" + COUNT_OFF_PARENT + ";\n" + PARENT_NOTIFIED;

    /**
     * Postponing a run, as the advance's statements are sent: a guard (in the claim's transaction, that it is still
     * this one: else {@code claim_lost()}, CP002), the update by key with no function call, and its wake-up, due
     * later, for the other engines ({@link Wakes}), for the run as the update left it (its version one more than
     * the one bound). Parameters: the claim's transaction twice; the delay, whether the SEEN is kept, the key and
     * version; the key, the version and the local sagas.
     */
    static final String POSTPONE = """
            SELECT NULL::int
              FROM (SELECT CASE WHEN ?::xid8 IS NULL OR pg_current_xact_id() = ?::xid8 THEN true -- under the claim's
                                ELSE {schema}.claim_lost() END AS allowed                     -- lock: its transaction
                    OFFSET 0) g
             WHERE g.allowed IS NULL;
            UPDATE {schema}.run
               SET runnable_at = {now} + ? * interval '1 millisecond', retries = retries + 1,
                   version = version + 1,
                   started_at = CASE WHEN ? THEN coalesce(started_at, {now}) ELSE started_at END
             WHERE root_id = ? AND id = ? AND status = 'RUNNABLE' AND version = ?;
            WITH moved AS (
              SELECT saga, saga_version, status, runnable_at FROM {schema}.run
               WHERE root_id = ? AND id = ? AND status = 'RUNNABLE' AND version = ? + 1
            ), {notified}
            SELECT count(*) FROM moved, notified
            """.replace("{notified}", Wakes.notifying("notified", "moved", "?::text"));

    /** Parks a runnable run that met database trouble too often in a row, if nobody moved it meanwhile. */
    static final String PARK_AFTER_RETRIES = """
            UPDATE {schema}.run
               SET status = 'PARKED', failure = ?::jsonb, retries = retries + 1, version = version + 1
             WHERE root_id = ? AND id = ? AND status = 'RUNNABLE' AND version = ?
            """;

    /**
     * Advance: the run's guard, its new state and events, and, when it finished, its count-off at its parent
     * ({@link #COUNT_OFF_PARENT}, then {@link #PARENT_NOTIFIED}): the parent becomes runnable when its last child
     * finishes (the step barrier as a counter). The guard asserts that the run's scope was not cancelled meanwhile
     * (SQLSTATE CP001 otherwise); an advance that commits the run, or leaves it waiting on the happy path, reads that
     * under the hierarchy's operator lock ({@code commit_allowed}, schema version 24; {@link
     * AdvanceBinding#excludesCancellation}), so that a cancellation deciding at the same time sees the commit (or
     * wakes the waiting run after it), or the advance sees the cancellation. The count-off's statements come after
     * the guard, so their snapshots postdate that lock. Five statements; the count-off's is the second result.
     */
    static final String ADVANCE = ADVANCE_RUN + ";\n" + COUNT_OFF_PARENT + ";\n" + PARENT_NOTIFIED;

    /**
     * Advance of a run with no parent to count off (it did not finish, or it has no awaited parent): the advance's
     * own three statements. Its result is the guard's, empty as {@link #ADVANCE}'s count-off is when it counts off at
     * no parent.
     */
    static final String ADVANCE_ALONE = ADVANCE_RUN;
}
