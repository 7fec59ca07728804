'use strict';
/*
 * Retry policies and the attempt log (protocol.md, "The attempt log"): a step's failed attempts that its policy runs
 * again (ATTEMPT_FAILED, the first 3 of a series), the closing ATTEMPT_FAILED of a series of more than 4 attempts, and
 * PARKED before every parking advance. Written in the transaction of the advance, before it.
 */

/** Failed attempts of a step kept whole, each as it happens (later ones are counted by the attempt numbers). */
const KEPT_FIRST = 3;

/**
 * A step's retry policy, checked when the saga is defined: { attempts (in all, 1 = no retry), initialDelayMillis
 * (default 1000), multiplier (default 2), maxDelayMillis (default 300000), park (default false: roll back when the
 * attempts are exhausted; true: park the run for an operator) }. Returns the policy with its defaults, or null.
 */
function retryPolicy(stepName, retry) {
  if (retry === undefined || retry === null) return null;
  const policy = { initialDelayMillis: 1000, multiplier: 2, maxDelayMillis: 300000, park: false, ...retry };
  const problems = [
    [Number.isInteger(policy.attempts) && policy.attempts >= 1 && policy.attempts <= 1000000,
      'attempts must be an integer between 1 and 1000000'],
    [Number.isInteger(policy.initialDelayMillis) && policy.initialDelayMillis >= 0,
      'initialDelayMillis must be an integer >= 0'],
    [Number.isFinite(policy.multiplier) && policy.multiplier >= 1, 'multiplier must be a finite number >= 1'],
    [Number.isInteger(policy.maxDelayMillis) && policy.maxDelayMillis >= 0, 'maxDelayMillis must be an integer >= 0'],
    [typeof policy.park === 'boolean', 'park must be true or false'],
  ].filter(([ok]) => !ok).map(([, why]) => why);
  if (problems.length > 0) {
    throw new Error(`The retry policy of step '${stepName}': ${problems.join('; ')} (was ${JSON.stringify(retry)})`);
  }
  return policy;
}

/** The wait after failed attempt number `attempt` (1-based), as Java's RetryPolicy.delayAfter. */
function delayAfter(policy, attempt) {
  const millis = policy.initialDelayMillis * policy.multiplier ** Math.max(0, attempt - 1);
  return millis >= policy.maxDelayMillis ? policy.maxDelayMillis : Math.floor(millis);
}

class AttemptLog {
  constructor(participant) {
    this.p = participant;
  }

  /** Failed attempt `run.attempt` of `step`, which its retry policy runs again: an event for the first three only. */
  async failed(c, run, step, why) {
    if (run.attempt > KEPT_FIRST) return;
    await this.event(c, run, 'ATTEMPT_FAILED', step, why, run.attempt);
  }

  /**
   * The series of attempts of `step` ends now (the step succeeded, the run is parked or rolls back) at the claimed
   * attempt: after more than 4 attempts, the last retried one, read from the run's failure before the advance.
   */
  async ended(c, run, step) {
    if (run.attempt - 1 <= KEPT_FIRST) return;
    await c.query(this.p.sql(`
      INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, attempt, created_at,
                                  root_id)
      SELECT message_id, 'ATTEMPT_FAILED', saga, $1, $2, lineage, failure, $3::int, statement_timestamp(), root_id
        FROM {schema}.run WHERE id = $4::uuid AND failure->>'type' <> 'dev.coop.DatabaseTrouble'`),
    [this.p.engineId, step, run.attempt - 1, run.id]);
  }

  /** The run stops at `step` for an operator, at the claimed attempt, because of `why`: before the parking advance. */
  async parked(c, run, step, why) {
    await this.ended(c, run, step);
    await this.event(c, run, 'PARKED', step, why, run.attempt);
  }

  /** An event of the attempts; a PARKED one also counts the parking in run_count (protocol.md, run_count). */
  event(c, run, type, step, why, attempt) {
    return c.query(this.p.sql(`
      WITH logged AS (
        INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at, attempt,
                                    created_at, root_id)
        VALUES ($1::uuid, $2, $3, $4, $5, $6::uuid[], $7::jsonb, $8::timestamptz, $9::int, statement_timestamp(),
                ($6::uuid[])[1])
        RETURNING type, saga
      )
      INSERT INTO {schema}.run_count AS c (minute, saga, shard, parked)
      SELECT date_trunc('minute', clock_timestamp()), saga, pg_backend_pid(), 1 FROM logged
       WHERE type = 'PARKED' AND left(saga, 1) <> '~'
      ON CONFLICT (minute, saga, shard) DO UPDATE SET parked = c.parked + 1`),
    [run.message_id, type, run.saga, this.p.engineId, step, run.lineage, why, run.claimed_at, attempt]);
  }
}

module.exports = { AttemptLog, retryPolicy, delayAfter };
