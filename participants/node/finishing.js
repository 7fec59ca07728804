'use strict';
/*
 * What follows the advance that finishes a run (protocol.md, "The finishing advance and what follows it"): the
 * count-off at its parent and the cascade up, then the settlement of the join memberships of the messages whose runs
 * finished, and the outcome message of each join that ended.
 */

const { WOKEN, PARENT_WOKEN } = require('./wakes');

/** A parent whose last step already ran commits with its last child (cascading completion). */
const PARENT_COMMITS = `p.final_step IS NOT NULL AND p.phase = 'HAPPY' AND p.failed_children = 0
  AND $1::text = 'COMMITTED'
  AND {schema}.commit_allowed(p.lineage[1], p.lineage[coalesce(p.cancel_from, 1):], false)`; // v24: under the lock

/**
 * Counts a finished run off at its parent, and each parent that this commits at its own parent, and so on up
 * (engine: the finishing transaction's engine id, null for a client's settlement). Returns the messages of the
 * parents it committed.
 */
async function countOff(participant, c, run, status, engine) {
  const messages = [];
  let parentId = run.awaited ? run.parent_id : null;
  while (parentId) {
    const { rows } = await c.query(participant.sql(`
      WITH parent AS (
        UPDATE {schema}.run p
           SET pending_children = p.pending_children - 1,
               failed_children = p.failed_children + CASE WHEN p.phase = 'ROLLBACK'
                                                          THEN ($1::text = 'ROLLBACK_FAILED')::int
                                                          ELSE ($1::text <> 'COMMITTED')::int END,
               status = CASE WHEN p.pending_children > 1 THEN p.status
                             WHEN ${PARENT_COMMITS} THEN 'COMMITTED' ELSE 'RUNNABLE' END,
               finished_at = CASE WHEN p.pending_children = 1 AND ${PARENT_COMMITS} THEN statement_timestamp()
                                  ELSE p.finished_at END,
               runnable_at = CASE WHEN p.pending_children = 1 THEN statement_timestamp() ELSE p.runnable_at END,
               version = p.version + 1
         WHERE p.id = $2 AND p.status IN ('WAITING', 'RUNNABLE') AND p.pending_children > 0
        RETURNING p.id, p.saga, p.status, p.message_id, p.lineage, p.parent_id, p.awaited, p.final_step,
                  p.pending_children, p.runnable_at, p.ordering_key, p.root_id
      ), parent_committed AS (
        INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, started_at, root_id)
        SELECT message_id, 'COMMITTED', saga, $3, final_step, lineage, $4, root_id FROM parent
         WHERE status = 'COMMITTED'
      ), ${PARENT_WOKEN}
      SELECT message_id, parent_id, awaited, status FROM parent, parent_woken`), [status, parentId, engine, run.claimed_at]);
    const parent = rows[0];
    if (!parent || parent.status !== 'COMMITTED') break;
    messages.push(parent.message_id);
    parentId = parent.awaited ? parent.parent_id : null;
    status = 'COMMITTED';
  }
  return messages;
}

/** Joins: settle the pending memberships of messages whose runs all finished (protocol.md, "Joins"). */
async function settleJoins(participant, c, messages) {
  const pending = (await c.query(
    participant.sql('SELECT join_id, message_id FROM {schema}.join_pending_members($1::uuid[])'), [messages])).rows;
  if (pending.length === 0) return;
  const { rows } = await c.query(participant.sql(`
    SELECT message_id, bool_and(status IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED')) AS finished,
           bool_or(status IN ('ROLLED_BACK', 'ROLLBACK_FAILED')) AS failed
      FROM {schema}.run WHERE message_id = ANY($1::uuid[]) GROUP BY message_id`),
  [[...new Set(pending.map((p) => p.message_id))]]);
  const state = new Map(rows.filter((r) => r.finished).map((r) => [r.message_id, r.failed ? 'FAILED' : 'COMPLETED']));
  const settled = pending.filter((p) => state.has(p.message_id));
  if (settled.length === 0) return;
  const ended = (await c.query(participant.sql(`
    WITH input AS (
      SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS i(join_id, message_id, state)
    ), settled AS (
      UPDATE {schema}.join_member m SET state = i.state, settled_by = 'RUNS', settled_at = statement_timestamp()
        FROM input i WHERE m.join_id = i.join_id AND m.message_id = i.message_id AND m.state = 'PENDING'
      RETURNING m.join_id, m.state
    ), counted AS (
      SELECT join_id, count(*) FILTER (WHERE state = 'COMPLETED')::int AS completed,
             count(*) FILTER (WHERE state = 'FAILED')::int AS failed
        FROM settled GROUP BY join_id
    ), ending AS (
      SELECT g.id, g.status = 'OPEN' AND g.completed + g.failed + c.completed + c.failed >= g.expected AS ends,
             g.fail_if_any_failed AND g.failed + c.failed > 0 AS fails, c.completed, c.failed
        FROM {schema}.join_group g JOIN counted c ON c.join_id = g.id
    )
    UPDATE {schema}.join_group g
       SET completed = g.completed + e.completed, failed = g.failed + e.failed,
           status = CASE WHEN NOT e.ends THEN g.status WHEN e.fails THEN 'FAILED' ELSE 'COMPLETED' END,
           finished_at = CASE WHEN e.ends THEN statement_timestamp() ELSE g.finished_at END,
           outcome_message_id = CASE WHEN e.ends THEN {schema}.uuid_v7() ELSE g.outcome_message_id END
      FROM ending e WHERE g.id = e.id
    RETURNING g.id, e.ends`),
  [settled.map((s) => s.join_id), settled.map((s) => s.message_id), settled.map((s) => state.get(s.message_id))]))
    .rows.filter((r) => r.ends);
  for (const join of ended) await publishJoinOutcome(participant, c, join.id);
}

/** The one message a join publishes when it leaves OPEN, launched on the global scope like a client's launch. */
async function publishJoinOutcome(participant, c, joinId) {
  const g = (await c.query(participant.sql(`
    SELECT grouping_key, status, metadata::text AS metadata, expected, attached, completed, failed,
           on_complete_topic, on_fail_topic, outcome_message_id FROM {schema}.join_group WHERE id = $1`),
  [joinId])).rows[0];
  const members = (await c.query(participant.sql(`
    SELECT message_id AS "messageId", state FROM {schema}.join_member WHERE join_id = $1
     ORDER BY attached_at, message_id`), [joinId])).rows;
  const result = `{"joinId":${JSON.stringify(joinId)},"key":${JSON.stringify(g.grouping_key)},`
    + `"status":"${g.status}","metadata":${g.metadata ?? 'null'},"expected":${g.expected},`
    + `"attached":${g.attached},"completed":${g.completed},"failed":${g.failed},`
    + `"members":${JSON.stringify(members)}}`;
  const topic = g.status === 'COMPLETED' ? g.on_complete_topic : g.on_fail_topic;
  await c.query(participant.sql(`
    WITH msg AS (
      INSERT INTO {schema}.message (id, topic, payload, created_at, root_id)
      VALUES ($1, $2, $3::jsonb, statement_timestamp(), $1)
    ), emitted AS (
      INSERT INTO {schema}.event (message_id, type, lineage, root_id) VALUES ($1, 'EMITTED', ARRAY[$1::uuid], $1)
    ), runs AS (
      INSERT INTO {schema}.run (id, message_id, saga, saga_version, lineage, status, runnable_at, root_id)
      SELECT x.id, $1, x.saga, x.version, ARRAY[$1::uuid, x.id], 'RUNNABLE', statement_timestamp(), $1
        FROM (SELECT {schema}.uuid_v7() AS id, saga, version FROM {schema}.saga_registration WHERE topic = $2
               ORDER BY saga) x
      RETURNING saga, status, runnable_at
    ), ${WOKEN('runs')}
    SELECT notified FROM woken`),
  [g.outcome_message_id, topic, result]);
}

module.exports = { PARENT_COMMITS, countOff, settleJoins };
