package dev.coop.internal.store;

/**
 * The SQL of an advance: the advance in its forms, its quiet form, the count-off at the parent, and the postponing
 * and parking of a run that met database trouble. {@code {schema}} is replaced by the validated schema name.
 */
public final class AdvanceSql {
    private AdvanceSql() {
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
     * Whether a cancellation of a scope of the run exists, read with the statement's snapshot (two parameters: the
     * root and the scope): the guard calls {@code assert_not_cancelled} only then. On Citus the guard must read no
     * distributed table itself (it is evaluated on the coordinator, {@link #GUARD}), so this becomes a condition that
     * is always true there ({@link CitusLayout#onCitus}) and the function reads the cancellation by root.
     */
    static final String CANCELLATION_SEEN = "EXISTS (SELECT 1 FROM {schema}.cancellation x"
            + " WHERE x.root_id = ?::uuid AND x.scope_id = ANY(?::uuid[]))";

    /**
     * The advance's checks (schema version 30), a scalar subquery without tables that its run's {@code UPDATE} reads
     * as one value (an initplan: evaluated once), every input bound: the advance runs in the transaction that claimed
     * the run ({@code claim_lost} raises CP002 otherwise: a step ended that transaction); when it commits the run or
     * leaves it waiting, the run's scope was not cancelled, read under the hierarchy's operator lock ({@code
     * commit_allowed}, version 24); otherwise, on the happy path, not cancelled as the statement's snapshot sees it
     * ({@code assert_not_cancelled}, CP001). The functions raise, so that nothing sent after the advance in its round
     * trip (its COMMIT) commits a step whose check failed. They are not applied to the update's rows: no volatile
     * function inside an update of a hot table, and on Citus a subquery without tables is planned as a subplan that
     * the coordinator evaluates (where operators take the lock), its value sent with the update to the hierarchy's
     * shard. (A CTE the update reads does the same on Citus, and cost PostgreSQL more per advance.) Parameters: the
     * claim's transaction, whether the advance commits or waits, the root and the scope, whether it checks the
     * cancellation, the root and the scope twice.
     */
    static final String GUARD = """
            (SELECT CASE WHEN pg_current_xact_id() <> ?::xid8 THEN {schema}.claim_lost()
                         WHEN ? THEN {schema}.commit_allowed(?::uuid, ?::uuid[], true) -- it commits or waits
                         WHEN ? AND {cancellationSeen} THEN {schema}.assert_not_cancelled(?::uuid, ?::uuid[])
                         ELSE true END)""".replace("{cancellationSeen}", CANCELLATION_SEEN);

    /**
     * The rows of the advance's events as plain PostgreSQL inserts them: the run's columns, one array per column of
     * the entries, then the executed instance that the first (the SUSPENDED) carries. {@link #eventValues} replaces
     * them on Citus.
     */
    private static final String EVENT_ROWS = """
              SELECT ?, e.type, ?, ?, e.step, ?, e.exception::jsonb, ?, e.context, i.seq, i.instance, i.iteration,
                     ?::uuid
                FROM unnest(?::text[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS e(type, step, exception, context, n)
                LEFT JOIN (SELECT ?::int AS seq, ?::int AS instance, ?::int AS iteration) i ON e.n = 1 -- the SUSPENDED
               ORDER BY e.n
            """;

    /** The advance's events' CTE; {@link #eventValues} replaces it on Citus. */
    private static final String EVENTS = """
            WITH events AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at, context,
                                          step_seq, instance, iteration, root_id)
            """ + EVENT_ROWS + """
              RETURNING 1
            ), advanced AS (
            """;

    /** One event's row on Citus ({@link #eventValues}): its 13 columns in the order of {@link #EVENTS}. */
    private static final String EVENT_VALUES_ROW = "(?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?::int, ?::int, ?::int, ?::uuid)";

    /**
     * {@code advance} (any form, as sent) with its events as Citus can route them: an {@code INSERT ... VALUES} of
     * {@code events} rows, each with its values bound ({@link AdvanceBinding#bindEventValues}), in place of the
     * {@code INSERT ... SELECT FROM unnest(...)}, which Citus runs through the coordinator (the rows copied to an
     * intermediate result on the worker, then inserted from it) and commits in two phases. Citus evaluates the
     * {@code VALUES}' {@code event_id_seq} on the coordinator, so the events keep the hierarchy's one order of ids.
     * Without events, the CTE inserts nothing.
     */
    static String eventValues(String advance, int events) {
        if (!advance.contains(EVENT_ROWS)) {
            throw new IllegalStateException("not an advance with its events: " + advance);
        }
        if (events == 0) {
            int from = advance.indexOf("WITH events AS (");
            int to = advance.indexOf("), advanced AS (");
            return advance.substring(0, from) + "WITH events AS (SELECT 1 WHERE false" + advance.substring(to);
        }
        return advance.replace(EVENT_ROWS, "              VALUES "
                + String.join(",\n                     ", java.util.Collections.nCopies(events, EVENT_VALUES_ROW))
                + "\n");
    }

    /** The advance's own part: its parameters come first in both forms. Ends after its last CTE. */
    private static final String ADVANCE_RUN = EVENTS + """
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
               WHERE root_id = ? AND id = ? AND {guard}
                 AND (?::text IS NULL OR (SELECT true FROM pg_notify('coop_{schema}', ?::text))) -- due later (v27)
            )
            """
            .replace("{runnableAt}", SET_RUNNABLE_AT).replace("{guard}", GUARD);

    /**
     * Advance: append the run's events, set its new state and, when it finished, count it off at its parent. The
     * parent becomes runnable when its last child finishes (the step barrier as a counter). On the happy path the
     * update first asserts that the run's scope was not cancelled meanwhile (SQLSTATE CP001 otherwise); an advance
     * that commits the run, or leaves it waiting on the happy path, reads that under the hierarchy's operator lock
     * ({@code commit_allowed}, schema version 24; {@link AdvanceBinding#excludesCancellation}), so that a cancellation
     * deciding at the same time sees the commit (or wakes the waiting run after it), or the advance sees the
     * cancellation.
     */
    static final String ADVANCE = AdvanceSql.ADVANCE_RUN + ", " + AdvanceSql.COUNT_OFF_PARENT.formatted(
            "AND (SELECT count(*) FROM events) >= 0");

    /**
     * Advance of a run with no parent to count off (it did not finish, or it has no awaited parent): the same
     * statement without the parent's update and COMMITTED insert, which would find nothing but still cost their
     * planning and executor set-up on every step. Returns the same (empty) result as {@link #ADVANCE}.
     */
    static final String ADVANCE_ALONE = AdvanceSql.ADVANCE_RUN + """
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
     * Counting a finished run off at its parent (the step barrier as a counter): the parent becomes runnable when its
     * last child finished; or, when the parent had already run its last step and every child committed, the parent
     * commits right here (its COMMITTED is written by this transaction), and the caller counts it off at its own
     * parent in turn: the parent id returned is null when there is none to count off at (no parent, or one that
     * stopped awaiting it). Parameters: the child's final status four times, the times, the root, the parent id, the
     * engine, the start time.
     * Expressions read the parent row as updated (so concurrent siblings are seen), never a snapshot of it. Whether
     * the parent's scope was cancelled is read under the hierarchy's operator lock, taken shared ({@code
     * commit_allowed}, schema version 24), so that a cancellation deciding at the same time cannot miss the commit;
     * the parent's root and scope are bound ({@link #parentScope}), the first two parameters, so that the function is
     * called in a {@code SELECT} of its own, not in the update (schema version 30, as {@link #GUARD}).
     */
    private static final String COUNT_OFF_PARENT = """
            parent_allowed AS MATERIALIZED ( -- read only when the parent would commit (schema version 30)
              SELECT {schema}.commit_allowed(?::uuid, ?::uuid[], false) AS ok
            ), parent AS (
              UPDATE {schema}.run p
                 SET pending_children = p.pending_children - 1,
                     failed_children = p.failed_children + CASE WHEN p.phase = 'ROLLBACK'
                                                                THEN (?::text = 'ROLLBACK_FAILED')::int
                                                                ELSE (?::text <> 'COMMITTED')::int END,
                     status = CASE WHEN p.pending_children > 1 THEN p.status
                                   WHEN p.final_step IS NOT NULL AND p.phase = 'HAPPY' AND p.failed_children = 0
                                        AND ?::text = 'COMMITTED' AND (SELECT ok FROM parent_allowed)
                                   THEN 'COMMITTED' ELSE 'RUNNABLE' END,
                     finished_at = CASE WHEN p.pending_children = 1 AND p.final_step IS NOT NULL
                                         AND p.phase = 'HAPPY' AND p.failed_children = 0 AND ?::text = 'COMMITTED'
                                         AND (SELECT ok FROM parent_allowed)
                                        THEN {now} ELSE p.finished_at END,
                     runnable_at = CASE WHEN p.pending_children = 1 THEN {now} ELSE p.runnable_at END,
                     version = p.version + 1
               WHERE p.root_id = ?::uuid AND p.id = ?::uuid AND p.status IN ('WAITING', 'RUNNABLE')
                 AND p.pending_children > 0
              RETURNING p.id, p.saga, p.saga_version, p.status, p.message_id, p.lineage, p.parent_id, p.awaited,
                        p.final_step, p.pending_children, p.runnable_at, p.ordering_key, p.root_id, p.cancel_from
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
    public static final String COUNT_OFF_RESULT = "SELECT id, saga, status, message_id, CASE WHEN awaited THEN parent_id END, root_id, lineage, cancel_from FROM parent, parent_woken";

    /**
     * The count-off of {@link #COUNT_OFF} for a parent named by an SQL expression of the enclosing statement (an
     * external task settled by a client: its run's parent) instead of a bind parameter; ends with the same SELECT.
     * {@code after}: a condition of the parent's COMMITTED insert that makes it run after the statement's own events
     * (so that the log shows the child's end first).
     */
    public static String countOffParentOf(String rootId, String parentId, String parentScope, String after) {
        String named = COUNT_OFF_PARENT.replace("WHERE p.root_id = ?::uuid AND p.id = ?::uuid",
                "WHERE p.root_id = " + rootId + " AND p.id = " + parentId);
        String sql = named.replace("commit_allowed(?::uuid, ?::uuid[], false)",
                "commit_allowed(" + rootId + ", " + parentScope + ", false)");
        if (named.equals(COUNT_OFF_PARENT) || sql.equals(named)) {
            throw new IllegalStateException("the count-off no longer names its parent by parameters");
        }
        return sql.formatted(after);
    }

    /**
     * The scope of the parent of a run with {@code lineage} and {@code cancel_from} (SQL expressions) whose
     * cancellations keep the parent from committing, as {@link #parentScope(java.util.UUID[], Integer)} computes it.
     */
    public static String parentScopeOf(String lineage, String cancelFrom) {
        return ("CASE WHEN {c} IS NULL OR {c} >= cardinality({l}) THEN {l}[1:cardinality({l}) - 1]"
                + " ELSE {l}[{c}:cardinality({l}) - 1] END").replace("{c}", cancelFrom).replace("{l}", lineage);
    }

    /**
     * The scopes of a parent whose cancellation keeps it from committing, from its child's lineage (the parent's and
     * the child's own id) and {@code cancelFrom}. A child launched on the happy path has its parent's {@code
     * cancel_from}; one launched on the parent's rollback path has its own lineage's length, and then the parent is
     * not on the happy path and cannot commit: its whole lineage is returned, which can only make a commit wait for
     * the parent's own step. Never empty: the root is in every lineage.
     */
    static java.util.UUID[] parentScope(java.util.UUID[] childLineage, Integer cancelFrom) {
        int parentLength = childLineage.length - 1;
        int from = cancelFrom == null || cancelFrom >= childLineage.length ? 1 : Math.max(cancelFrom, 1);
        return java.util.Arrays.copyOfRange(childLineage, from - 1, parentLength);
    }

    /**
     * A count-off ({@link #ADVANCE}, {@link #COUNT_OFF}, as sent) on Citus: without its {@code parent_committed}, an
     * {@code INSERT ... SELECT} from the parent's update that Citus runs through the coordinator and commits in two
     * phases, and returning the parent's final step too (a tenth column), from which {@link #PARENT_COMMITTED} writes
     * the parent's COMMITTED when it committed here. Its parameters: the count-off's without the engine and the start
     * time of {@code parent_committed}.
     */
    static String countOffOnCitus(String sql) {
        int from = sql.indexOf("), parent_committed AS (");
        int to = sql.indexOf("parent_woken AS (");
        if (from < 0 || to < from) {
            throw new IllegalStateException("not a count-off: " + sql);
        }
        return CitusLayout.rewritten(sql.substring(0, from) + "), " + sql.substring(to), COUNT_OFF_RESULT,
                COUNT_OFF_RESULT.replace("cancel_from FROM", "cancel_from, final_step FROM"));
    }

    /**
     * On Citus, the COMMITTED of a parent committed by its last child's count-off ({@link #countOffOnCitus}), after
     * it in the same transaction: an {@code INSERT ... VALUES} the worker commits in one phase, its id from the
     * coordinator's {@code event_id_seq} (after the child's events). Parameters: the parent's message, saga, the
     * engine, its final step, lineage, the start time, its root.
     */
    static final String PARENT_COMMITTED = """
            INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, started_at, root_id)
            VALUES (?::uuid, 'COMMITTED', ?, ?, ?, ?::uuid[], ?, ?::uuid)""";

    /**
     * {@link #COUNT_OFF} on Citus: {@link #countOffOnCitus}, and the parent's {@code commit_allowed} read before it
     * ({@link #PARENT_ALLOWED}), its value bound in place of the first two parameters. Without an insert in the
     * statement Citus plans it as one router query, the {@code parent_allowed} CTE included: the function ran on the
     * worker and its read of {@code cancellation} failed there ("cannot execute a distributed query from a query on a
     * shard") whenever the count-off committed the parent (a task's settlement of a last step, a cascade of commits).
     */
    static String countOffAloneOnCitus(String countOff) {
        return CitusLayout.rewritten(countOffOnCitus(countOff), """
                parent_allowed AS MATERIALIZED ( -- read only when the parent would commit (schema version 30)
                  SELECT {schema}.commit_allowed(?::uuid, ?::uuid[], false) AS ok
                )""",
                "parent_allowed AS ( -- read before, on the coordinator (PARENT_ALLOWED)\n  SELECT ?::boolean AS ok\n)");
    }

    /**
     * On Citus, whether a parent that a standalone count-off may commit can commit ({@link #countOffAloneOnCitus}):
     * a statement without tables, which the coordinator runs (where operators take the lock). Parameters: the root,
     * the parent's scope.
     */
    static final String PARENT_ALLOWED = "SELECT {schema}.commit_allowed(?::uuid, ?::uuid[], false)";

    /** Counts a run that finished without an advance of its own (a parent committed by its last child) off. */
    static final String COUNT_OFF = "WITH " + COUNT_OFF_PARENT.formatted("");

    /** Postponing a run; its wake-up, due later, for the other engines (the last parameter: {@link Wakes}). */
    static final String POSTPONE = """
            WITH guard AS MATERIALIZED ( -- under the claim's lock: in the claim's transaction (as GUARD, version 30)
              SELECT CASE WHEN ?::xid8 IS NULL OR pg_current_xact_id() = ?::xid8 THEN true
                          ELSE {schema}.claim_lost() END AS ok
            ), moved AS (
            UPDATE {schema}.run
               SET runnable_at = {now} + ? * interval '1 millisecond', retries = retries + 1,
                   version = version + 1,
                   started_at = CASE WHEN ? THEN coalesce(started_at, {now}) ELSE started_at END
             WHERE root_id = ? AND id = ? AND status = 'RUNNABLE' AND version = ? AND (SELECT ok FROM guard)
            RETURNING saga, saga_version, status, runnable_at
            ), {notified}
            SELECT count(*) FROM moved, notified
            """.replace("{notified}", Wakes.notifying("notified", "moved", "?"));

    /** Parks a runnable run that met database trouble too often in a row, if nobody moved it meanwhile. */
    static final String PARK_AFTER_RETRIES = """
            UPDATE {schema}.run
               SET status = 'PARKED', failure = ?::jsonb, retries = retries + 1, version = version + 1
             WHERE root_id = ? AND id = ? AND status = 'RUNNABLE' AND version = ?
            """;
}
