package dev.coop.internal.store;

/**
 * The SQL of a round's deferred advances ({@link RoundAdvances}): one statement for the advances of several runs of
 * one saga, each run's part what its own advance ({@link AdvanceSql#ADVANCE_ALONE}) writes, and in its counting form
 * the count-offs of the runs that finished at their awaited parents, one update per parent for all its children, as
 * {@link AdvanceSql#COUNT_OFF} once per child, in the round's order, would leave it. {@code {schema}} is replaced by
 * the validated schema name, {@code {now}} by the statement's time.
 */
final class RoundAdvanceSql {
    private RoundAdvanceSql() {
    }

    /** What a run's update sets besides its status, due time and end, whether it stays runnable or finishes. */
    private static final String SET = """
            SET phase = i.phase, step_index = i.step_index, next_step = i.next_step,
                final_step = nullif(coalesce(i.final_step, r.final_step), ''), steps_done = i.steps_done,
                iterations = coalesce(i.iterations::int[], r.iterations),
                attempt = i.attempt, pending_children = i.pending,
                failed_children = CASE WHEN i.keep_failed THEN r.failed_children ELSE 0 END,
                waiting_since = CASE WHEN i.pending = 0 THEN NULL ELSE coalesce(r.waiting_since, k.now) END,
                rollback_seq = i.rollback_seq, rollback_stage = i.rollback_stage,
                rollback_cause = i.rollback_cause::jsonb, resolution = NULL,
                context = i.context,
                result = coalesce(i.result, r.result),
                finally_done = CASE WHEN i.finally_done IS NULL THEN r.finally_done
                                    ELSE r.finally_done || i.finally_done END,
                started_at = coalesce(r.started_at, i.claimed_at::timestamptz),
                failure = i.failure::jsonb, retries = 0, reserved_until = NULL, version = r.version + 1""";

    /**
     * Which runs an update takes ({@code %s}): those whose checks passed ({@code guard}), each checked as the single
     * advance checks it ({@link AdvanceSql#GUARD}).
     */
    private static final String WHERE = """
              FROM input i JOIN guard g ON g.id = i.id AND g.ok, clock k
             WHERE r.root_id = (i.lineage::uuid[])[1] AND r.id = i.id AND %s
            RETURNING 1""";

    /**
     * Each run's checks, as its own advance's guard makes them (schema version 30), in a {@code SELECT} ahead of the
     * updates: its claim's transaction is still this one; when it commits, its scope (bound: {@code i.scope}) was not
     * cancelled, read under the hierarchy's operator lock (version 24); else, when asked, not cancelled as the
     * statement's snapshot sees it. The functions raise, so that nothing commits a step whose check failed.
     */
    private static final String GUARD = """
            guard AS MATERIALIZED (
              SELECT i.id,
                     CASE WHEN pg_current_xact_id() <> i.xact::xid8 THEN {schema}.claim_lost()
                          WHEN i.finished = 'COMMITTED' -- it commits: excludes a cancellation (version 24)
                          THEN {schema}.commit_allowed((i.lineage::uuid[])[1], i.scope::uuid[], true)
                          WHEN i.check_cancellation AND EXISTS (SELECT 1 FROM {schema}.cancellation x
                                                                 WHERE x.root_id = (i.lineage::uuid[])[1]
                                                                   AND x.scope_id = ANY(i.scope::uuid[]))
                          THEN {schema}.assert_not_cancelled((i.lineage::uuid[])[1], i.scope::uuid[])
                          ELSE true END AS ok
                FROM input i
            )""";

    /**
     * The advances, up to their last CTE. {@code clock} reads the time once and names the sagas this engine wakes
     * in-process (no NOTIFY for a parent of theirs woken here, {@link Wakes}). A finished run's due time becomes
     * now, as its own advance sets it. {@code count_off} is the parent a finished run counts off at, or null.
     */
    private static final String ADVANCES = """
            WITH clock AS MATERIALIZED (
              SELECT {now} AS now, ?::text AS local_sagas -- the sagas this engine wakes itself (Wakes)
            ), input AS (
              SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[], ?::text[], ?::int[], ?::text[],
                                   ?::text[], ?::int[], ?::text[], ?::int[], ?::int[], ?::boolean[], ?::int[],
                                   ?::text[], ?::text[], ?::text[], ?::text[], ?::int[], ?::text[], ?::text[],
                                   ?::boolean[], ?::int[], ?::int[], ?::int[], ?::text[], ?::uuid[], ?::text[])
                     WITH ORDINALITY AS i(id, message_id, lineage, claimed_at, phase, step_index, next_step, final_step,
                                          steps_done, iterations, attempt, pending, keep_failed, rollback_seq,
                                          rollback_stage, rollback_cause, context, result, finally_done, failure, xact,
                                          check_cancellation, instance_seq, instance, iteration, finished, count_off, scope,
                                          n)
            ), {guard}, events AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at, context,
                                          step_seq, instance, iteration, root_id)
              SELECT i.message_id, e.type, ?, ?, e.step, i.lineage::uuid[], e.exception::jsonb,
                     i.claimed_at::timestamptz, e.context,
                     CASE WHEN e.first THEN i.instance_seq END, CASE WHEN e.first THEN i.instance END,
                     CASE WHEN e.first THEN i.iteration END, -- the run's SUSPENDED carries its executed instance
                     (i.lineage::uuid[])[1]
                FROM unnest(?::int[], ?::text[], ?::text[], ?::text[], ?::text[], ?::boolean[])
                     WITH ORDINALITY AS e(run, type, step, exception, context, first, n)
                JOIN input i ON i.n = e.run
               ORDER BY e.n
              RETURNING 1
            ), runnable AS (
              UPDATE {schema}.run r
            {set}
            {runnable}
            ), finished AS (
              UPDATE {schema}.run r
            {set},
                     status = i.finished, runnable_at = k.now, finished_at = k.now
            {finished}
            )"""
            .replace("{guard}", GUARD).replace("{set}", SET)
            .replace("{runnable}", WHERE.formatted("i.finished IS NULL"))
            .replace("{finished}", WHERE.formatted("i.finished IS NOT NULL"));

    /** The advances of runs none of which counts off: how many runs and events they wrote. */
    static final String SQL = ADVANCES + """

            SELECT (SELECT count(*) FROM runnable) + (SELECT count(*) FROM finished), (SELECT count(*) FROM events)""";

    /**
     * Whether the last of the counted children makes the parent commit (as the count-off of that child decides it): the
     * parent ran its last step, is on the happy path, had no failed child and none of these failed, and its scope was
     * not cancelled (read under the hierarchy's operator lock, in this {@code SELECT} ahead of the parents' update,
     * only for a parent that would commit: schema version 30). The parents as locked are their newest rows.
     */
    private static final String COMMITS = """
            commits AS MATERIALIZED (
              SELECT c.parent, l.pending_children = c.n AND l.final_step IS NOT NULL AND l.phase = 'HAPPY'
                               AND l.failed_children = 0 AND c.failed = 0
                               AND {schema}.commit_allowed(l.root_id, l.lineage[coalesce(l.cancel_from, 1):], false)
                               AS ok
                FROM counts c
                JOIN locked l ON l.id = c.parent
            )""";

    /**
     * The advances, then the count-offs of the runs that finished at their parents, one update per parent. The parents
     * are locked first, in id order ({@code LockRows} above the sort), so that transactions counting off at the same
     * parents cannot deadlock on them; their rows as locked are the newest. Of a parent's children (in the round's
     * order) only as many as it still awaits count, as successive count-offs would: {@code pending_children} less their
     * number, {@code failed_children} plus those that failed for the parent's path, {@code version} plus their number,
     * and when the last awaited child counted, the parent runnable now, or committed (with its COMMITTED, written after
     * the statement's own events, started at the last child's claim). One parameter: the engine of that COMMITTED.
     * Returns each parent counted off as updated, its own parent to count it off at when it committed here (null when
     * it has none or that parent stopped awaiting it), and the start of its COMMITTED.
     */
    static final String COUNTING_OFF = ADVANCES + """
            , counting AS (
              SELECT i.count_off AS parent, (i.lineage::uuid[])[1] AS root, i.finished AS status,
                     i.claimed_at::timestamptz AS claimed_at,
                     row_number() OVER (PARTITION BY i.count_off ORDER BY i.n) AS rank
                FROM input i
               WHERE i.count_off IS NOT NULL
            ), locked AS (
              SELECT p.id, p.pending_children, p.final_step, p.phase, p.failed_children, p.root_id, p.lineage,
                     p.cancel_from
                FROM {schema}.run p
               WHERE (p.root_id, p.id) IN (SELECT root, parent FROM counting)
               ORDER BY p.id
                 FOR UPDATE
            ), counts AS (
              SELECT c.parent, min(c.root::text)::uuid AS root, count(*)::int AS n,
                     count(*) FILTER (WHERE c.status = 'ROLLBACK_FAILED')::int AS rollback_failed,
                     count(*) FILTER (WHERE c.status <> 'COMMITTED')::int AS failed,
                     (array_agg(c.claimed_at ORDER BY c.rank DESC))[1] AS started_at
                FROM counting c
                JOIN locked l ON l.id = c.parent
               WHERE c.rank <= l.pending_children
               GROUP BY c.parent
            ), {commits}, parent AS (
              UPDATE {schema}.run p
                 SET pending_children = p.pending_children - c.n,
                     failed_children = p.failed_children + CASE WHEN p.phase = 'ROLLBACK' THEN c.rollback_failed
                                                                ELSE c.failed END,
                     status = CASE WHEN p.pending_children > c.n THEN p.status
                                   WHEN a.ok THEN 'COMMITTED' ELSE 'RUNNABLE' END,
                     finished_at = CASE WHEN a.ok THEN k.now ELSE p.finished_at END,
                     runnable_at = CASE WHEN p.pending_children = c.n THEN k.now ELSE p.runnable_at END,
                     version = p.version + c.n
                FROM counts c JOIN commits a ON a.parent = c.parent, clock k
               WHERE p.root_id = c.root AND p.id = c.parent AND p.status IN ('WAITING', 'RUNNABLE')
                 AND p.pending_children > 0
              RETURNING p.id, p.saga, p.saga_version, p.status, p.message_id, p.lineage, p.parent_id, p.awaited,
                        p.final_step, p.pending_children, p.runnable_at, p.ordering_key, c.started_at, p.root_id,
                        p.cancel_from
            ), {woken}, parent_committed AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, started_at, root_id)
              SELECT message_id, 'COMMITTED', saga, ?, final_step, lineage, started_at, root_id
                FROM parent
               WHERE status = 'COMMITTED' AND (SELECT count(*) FROM events) >= 0 -- after the children's events
            )
            , released AS ( -- a keyed parent committed here releases its key's next run (KeyedRuns)
              SELECT count(*) AS released FROM parent w
               WHERE CASE WHEN w.status = 'COMMITTED' AND w.ordering_key IS NOT NULL
                          THEN {schema}.release_ordering_key_after(w.saga, w.ordering_key, ARRAY[w.id])
                          ELSE false END
            )
            SELECT id, saga, status, message_id, CASE WHEN awaited THEN parent_id END, started_at, root_id, lineage,
                   cancel_from
              FROM parent, parent_woken, released"""
            .replace("{commits}", COMMITS)
            .replace("{woken}", Wakes.notifying("parent_woken", "(SELECT * FROM parent WHERE pending_children = 0)",
                    "(SELECT local_sagas FROM clock)"));
}
