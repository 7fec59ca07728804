'use strict';
/*
 * External tasks that any saga opened, completed from Node.js (protocol.md, "External tasks": Settle).
 */
const { Pool } = require('pg');
const { PARENT_COMMITS, countOff, settleJoins } = require('./finishing');
const { PARENT_WOKEN } = require('./wakes');

/**
 * Completes an external task a Java (or any) saga opened, by its token or correlation key, in one statement
 * (protocol.md, "External tasks": the task's run is locked first, then the task row, then the parent is counted
 * off); a parent committed by it is counted off in turn. Returns 'SETTLED', or 'ALREADY_SETTLED' when the task was
 * completed before with the same result; throws when it was settled otherwise or does not exist.
 */
async function completeTask(participant, tokenOrKey, result, actor) {
  const byToken = /^ct_[A-Za-z0-9_-]{32}$/.test(tokenOrKey);
  const json = JSON.stringify(result);
  if (!participant.pool) { // a participant that runs no saga, only completes tasks: a pool of its own
    participant.pool = new Pool({ max: 2, ...participant.pgOptions });
  }
  const c = await participant.pool.connect();
  try {
    await c.query('BEGIN');
    const { rows } = await c.query(participant.sql(`
      WITH target AS ( -- the hierarchy's operator lock first, shared (v24: a cancellation deciding waits for us)
        SELECT t.run_id, pg_advisory_xact_lock_shared(x'636f6f70'::int, hashtext(t.root_id::text)) AS turn
          FROM {schema}.external_task t
         WHERE ${byToken ? 't.token = $1' : "t.task_key = $1 AND t.state = 'OPEN'"}
      ), locked AS (
        SELECT r.id FROM {schema}.run r
         WHERE r.id = (SELECT run_id FROM target) AND r.started_at IS NULL AND r.phase = 'HAPPY'
           AND r.status IN ('WAITING', 'RUNNABLE')
         FOR UPDATE
      ), task AS (
        UPDATE {schema}.external_task t SET state = 'COMPLETED', settled_at = statement_timestamp(), settled_by = $3
         WHERE t.run_id = (SELECT id FROM locked) AND t.state = 'OPEN'
        RETURNING t.run_id
      ), settled AS (
        UPDATE {schema}.run r SET status = 'COMMITTED', result = $2, started_at = statement_timestamp(),
                                  finished_at = statement_timestamp(), version = r.version + 1
         WHERE r.id = (SELECT run_id FROM task)
        RETURNING r.id, r.message_id, r.lineage, r.parent_id, r.root_id
      ), logged AS (
        INSERT INTO {schema}.event (message_id, type, saga, lineage, root_id)
        SELECT s.message_id, e.type, '~external-task', s.lineage, s.root_id
          FROM settled s CROSS JOIN (VALUES (1, 'SEEN'), (2, 'COMMITTED')) AS e(n, type) ORDER BY e.n
        RETURNING 1
      ), parent AS (
        UPDATE {schema}.run p
           SET pending_children = p.pending_children - 1,
               status = CASE WHEN p.pending_children > 1 THEN p.status
                             WHEN ${PARENT_COMMITS} THEN 'COMMITTED' ELSE 'RUNNABLE' END,
               finished_at = CASE WHEN p.pending_children = 1 AND ${PARENT_COMMITS} THEN statement_timestamp()
                                  ELSE p.finished_at END,
               runnable_at = CASE WHEN p.pending_children = 1 THEN statement_timestamp() ELSE p.runnable_at END,
               version = p.version + 1
         WHERE p.id = (SELECT parent_id FROM settled) AND p.status IN ('WAITING', 'RUNNABLE')
           AND p.pending_children > 0
        RETURNING p.id, p.saga, p.status, p.message_id, p.lineage, p.parent_id, p.awaited, p.final_step,
                  p.pending_children, p.runnable_at, p.ordering_key, p.root_id
      ), parent_committed AS (
        INSERT INTO {schema}.event (message_id, type, saga, step, lineage, root_id)
        SELECT message_id, 'COMMITTED', saga, final_step, lineage, root_id FROM parent
         WHERE status = 'COMMITTED' AND (SELECT count(*) FROM logged) >= 0
      ), ${PARENT_WOKEN}
      SELECT (SELECT count(*) FROM settled)::int AS settled, (SELECT message_id FROM settled) AS task_message,
             p.message_id, p.parent_id, p.awaited, p.status
        FROM (SELECT 1) one LEFT JOIN parent p ON true CROSS JOIN parent_woken`).replaceAll('$1::text', "'COMMITTED'"), [tokenOrKey, json, actor]);
    const row = rows[0];
    if (row.settled === 0) {
      const found = (await c.query(participant.sql(`
        SELECT t.state, r.result FROM {schema}.external_task t JOIN {schema}.run r ON r.id = t.run_id
         WHERE ${byToken ? 't.token = $1' : 't.task_key = $1'} ORDER BY t.state = 'OPEN' DESC, t.created_at DESC
         LIMIT 1`), [tokenOrKey])).rows[0];
      await c.query('ROLLBACK');
      if (!found) throw new Error('No external task has this token or key');
      if (found.state === 'COMPLETED' && JSON.stringify(JSON.parse(found.result)) === json) return 'ALREADY_SETTLED';
      throw new Error(`External task ${tokenOrKey} is ${found.state}; this completion is refused`);
    }
    const messages = [row.task_message]; // the task's, and those of the parents committed here: their joins
    if (row.status === 'COMMITTED') { // the parent had run its last step: it committed here; count it off above
      messages.push(row.message_id, ...await countOff(participant, c, { parent_id: row.parent_id, awaited: row.awaited,
        claimed_at: null }, 'COMMITTED', null));
    }
    await settleJoins(participant, c, messages);
    await c.query('COMMIT');
    return 'SETTLED';
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    c.release();
  }
}

module.exports = { completeTask };
