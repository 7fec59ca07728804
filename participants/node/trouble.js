'use strict';
/*
 * Database trouble (protocol.md, "Database trouble"): a statement failed for a reason that is the database's, not the
 * step's. The run is retried later (jittered exponential backoff, run.retries + 1) and parked for an operator after
 * MAX_RETRIES in a row; it never rolls back for it, and no attempt of its step is counted or logged.
 *
 * Two sources: a statement of the participant's own (the claim, the launch, the advance, the count-off...), whatever
 * its SQLSTATE, after which the claiming transaction is rolled back; and a statement of the step's (or
 * compensation's) own code whose error is of one of the TROUBLE classes, after which only the step's writes are undone
 * (its savepoint) and the run is postponed in the claiming transaction, under the claim's lock.
 */
const { failure, failureOf } = require('./documents');
const { WOKEN } = require('./wakes');

/** How often in a row a run may meet database trouble before it is parked. */
const MAX_RETRIES = 1000;

/**
 * The SQLSTATE classes that make an error raised by a step's own statement database trouble: 08 (connection
 * exception), 40 (transaction rollback: serialization failure 40001, deadlock 40P01), 53 (insufficient resources),
 * 57P (operator intervention: shutdown, crash, restart). Any other, lock and statement timeouts (55P03, 57014)
 * included, fails the step.
 */
const TROUBLE = /^(08|40|53|57P)/;

/** Whether the error or one of its causes (err.cause, at most 100 deep) has a SQLSTATE of database trouble. */
function isDatabaseTrouble(err) {
  const seen = new Set();
  for (let e = err; e !== null && typeof e === 'object' && seen.size < 100 && !seen.has(e); e = e.cause) {
    seen.add(e);
    if (typeof e.code === 'string' && e.code.length === 5 && TROUBLE.test(e.code)) return true;
  }
  return false;
}

/** The wait after `retries` earlier retries in a row: 100 ms doubling up to 30 s, jittered over its upper half. */
function backoffMillis(retries) {
  const ceiling = Math.min(30000, 100 * 2 ** Math.min(retries, 10));
  return Math.floor(ceiling / 2 + Math.random() * (ceiling / 2 + 1));
}

/**
 * The run meets database trouble `e` at `step`: postponed, or parked with its PARKED event after MAX_RETRIES in a row,
 * only if nobody moved it meanwhile. `underLock`: in the claiming transaction, which still holds the run's lock (a
 * step's own statement failed and its writes were undone); the update then makes the advance's claim check and keeps
 * the claim's SEEN (started_at). Otherwise in the transaction the caller opened after rolling the claiming one back.
 */
async function postponeOrPark(p, c, run, step, e, underLock) {
  const where = `'${step}'`;
  if (run.retries + 1 < MAX_RETRIES) {
    const millis = backoffMillis(run.retries);
    p.log(`coop: run ${run.id} (saga ${run.saga}, ${where}) hit a database problem (${e.message}); `
      + `retrying in ${millis} ms`);
    await c.query(p.sql(`
      WITH moved AS (
        UPDATE {schema}.run SET runnable_at = statement_timestamp() + $2::bigint * interval '1 millisecond',
                                retries = retries + 1, version = version + 1,
                                started_at = CASE WHEN $4::xid8 IS NULL THEN started_at
                                                  ELSE coalesce(started_at, statement_timestamp()) END
         WHERE id = $1::uuid AND status = 'RUNNABLE' AND version = $3::int
           AND CASE WHEN $4::xid8 IS NULL OR pg_current_xact_id() = $4::xid8 THEN true ELSE {schema}.claim_lost() END
        RETURNING saga, status, runnable_at
      ), ${WOKEN('moved')} -- due later: the engines set a timer (protocol.md, Wake-ups)
      SELECT notified FROM woken`),
    [run.id, millis, run.version, underLock ? run.xact : null]);
    return;
  }
  const source = p.source(run);
  const why = JSON.stringify(failure(`Database trouble on ${MAX_RETRIES} attempts in a row at ${where}; parked for `
    + 'an operator (retry it with retryNow once the database is healthy)', 'dev.coop.DatabaseTrouble', source,
  [failureOf(e, source)]));
  p.log(`coop: run ${run.id} (saga ${run.saga}) met database trouble ${MAX_RETRIES} times in a row `
    + `(${e.message}); parking it`);
  const { rowCount } = await c.query(p.sql(`
    UPDATE {schema}.run SET status = 'PARKED', failure = $2::jsonb, retries = retries + 1, version = version + 1
     WHERE id = $1::uuid AND status = 'RUNNABLE' AND version = $3::int`), [run.id, why, run.version]);
  if (rowCount === 1) await p.attempts.parked(c, run, step, why);
}

module.exports = { MAX_RETRIES, isDatabaseTrouble, postponeOrPark };
