'use strict';
/*
 * What a participant's statements write that triggers on run wrote before schema version 27 (protocol.md, "What a
 * participant writes itself"): the wake-up notifications of the runs they make runnable, the release of an ordering
 * key's next run, and the counts over time that a run row cannot show.
 */

/** The payload of run w's wake-up: its saga when due now, "<saga> <milliseconds until due>" when due later. */
const PAYLOAD = "CASE WHEN w.runnable_at <= clock_timestamp() THEN w.saga ELSE w.saga || ' ' "
  + '|| ceil(extract(epoch FROM (w.runnable_at - clock_timestamp())) * 1000)::bigint::text END';

/**
 * A CTE `name` notifying channel coop_<schema> for every runnable row of `rows` (with saga, status and runnable_at).
 * It returns one row, and runs only when the statement reads it (FROM rows, name).
 */
function WOKEN(rows, name = 'woken') {
  return `${name} AS (SELECT count(pg_notify('coop_{schema}', ${PAYLOAD})) AS notified
      FROM ${rows} w WHERE w.status = 'RUNNABLE')`;
}

/**
 * A parent counted off (CTE parent, with saga, status, runnable_at, pending_children, ordering_key and id): its
 * wake-up when its last child counted off, and when it committed here with an ordering key, the release of its key's
 * next run. One row; read it.
 */
const PARENT_WOKEN = `parent_woken AS (
      SELECT (SELECT count(pg_notify('coop_{schema}', ${PAYLOAD})) FROM parent w
               WHERE w.status = 'RUNNABLE' AND w.pending_children = 0) AS notified,
             (SELECT count(*) FROM parent w
               WHERE CASE WHEN w.status = 'COMMITTED' AND w.ordering_key IS NOT NULL
                          THEN {schema}.release_ordering_key_after(w.saga, w.ordering_key, ARRAY[w.id])
                          ELSE false END) AS released)`;

/**
 * The commits of committed runs asked to roll back, counted in run_count (their rows will not show them): a
 * data-modifying CTE over `rows` (with saga and committed_at, the finished_at they had).
 */
function COMMITS_KEPT(rows) {
  return `kept AS (INSERT INTO {schema}.run_count AS c (minute, saga, shard, committed)
      SELECT date_trunc('minute', w.committed_at), w.saga, pg_backend_pid(), count(*) FROM ${rows} w
       WHERE w.committed_at IS NOT NULL AND left(w.saga, 1) <> '~' GROUP BY 1, 2
      ON CONFLICT (minute, saga, shard) DO UPDATE SET committed = c.committed + EXCLUDED.committed)`;
}

module.exports = { WOKEN, PARENT_WOKEN, COMMITS_KEPT };
