package dev.coop.internal.store;

/**
 * The SQL of a step's questions about the runs it caused: their results and failures, the unstarted ones, their
 * rollback. {@code {schema}} is replaced by the validated schema name.
 */
final class ChildSql {
    private ChildSql() {
    }

    /**
     * Rolling back a step instance: log a ROLLBACK_EMITTED for each message it launched and ask every committed run
     * of those messages to roll back (each starts with its own ROLLING_BACK when claimed). Runs that already
     * rolled back are left alone. Returns the woken runs per saga; the engines that run them are notified unless
     * the caller wakes them itself (last parameter, {@link Wakes}).
     */
    static final String REQUEST_CHILD_ROLLBACKS = """
            WITH targets AS (
              SELECT r.id, r.message_id, r.status, r.finished_at, r.root_id FROM {schema}.run r
               WHERE r.parent_id = ? AND r.parent_seq = ? AND r.root_id = ?
            ), emitted AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, root_id)
              SELECT m.message_id, 'ROLLBACK_EMITTED', ?, ?, ?, ?::uuid[], ?::jsonb, m.root_id
                FROM (SELECT DISTINCT message_id, root_id FROM targets) m ORDER BY m.message_id
            ), woken AS (
              UPDATE {schema}.run r
                 SET phase = 'ROLLBACK', status = 'RUNNABLE', rollback_stage = 'START', parent_context = ?, awaited = true,
                     rollback_seq = r.steps_done - 1, rollback_cause = ?::jsonb, runnable_at = {now},
                     finished_at = NULL, pending_children = 0, failed_children = 0, version = r.version + 1
                FROM targets t
               WHERE r.id = t.id AND t.status = 'COMMITTED' AND r.saga <> '~external-task' -- see ExternalTasks
              RETURNING r.saga, r.saga_version, r.status, r.runnable_at, t.finished_at AS committed_at
            ), {counted}, {notified}
            SELECT saga, count(*)::int FROM woken, notified GROUP BY saga
            """
            .replace("{notified}", Wakes.notifying("notified", "woken", "?"))
            .replace("{counted}", Counts.supersededCommits("counted", "woken"));

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
              RETURNING r.id, r.message_id, r.saga, r.lineage, r.ordering_key, r.root_id
            ), logged AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, lineage, exception, root_id)
              SELECT s.message_id, e.type, s.saga, ?, s.lineage, e.exception::jsonb, s.root_id
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
            ), released AS ( -- the keys of keyed runs among them go on (KeyedRuns, schema version 27)
              SELECT count(*) AS released
                FROM (SELECT DISTINCT saga, ordering_key FROM settled WHERE ordering_key IS NOT NULL) k
               WHERE {schema}.release_ordering_key_after(k.saga, k.ordering_key, ARRAY(SELECT id FROM settled))
            )
            SELECT id, message_id FROM settled, released
            """;

    static final String CHILD_FAILURES = """
            SELECT status, coalesce(failure, '{}'::jsonb)::text
              FROM {schema}.run
             WHERE parent_id = ? AND parent_seq = ? AND status <> 'COMMITTED' AND awaited
             ORDER BY created_at
            """;
}
