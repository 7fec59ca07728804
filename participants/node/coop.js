'use strict';
/*
 * A Coop participant in Node.js, written from docs/protocol.md: it runs sagas of its own in hierarchies that Java
 * sagas (or anyone following the protocol) start, and launches messages that anyone's sagas handle.
 *
 * What it does, in the protocol's words: registers its sagas in saga_registration (and their version, 1, in
 * saga_version); claims runnable runs of its sagas (of that version)
 * with FOR UPDATE SKIP LOCKED; runs each step in the claiming transaction (the step's business writes, what it
 * launched, its events and the run's update commit together); waits for the runs its step caused (the barrier);
 * counts finished runs off at their parent (committing a parent whose last step already ran, and so on up); settles
 * join members; rolls back (children first, then compensations, newest step first) when a step fails, when a child
 * failed, when its scope is cancelled, or when its parent asks it to. A step may have a retry policy (attempts.js):
 * its failed attempts are retried later, then the run rolls back or is parked for an operator, whose retryNow or
 * markStepDone it follows. Database trouble (its own statements failing, or a step's with a deadlock, a serialization
 * failure, a lost connection: trouble.js) retries the run later and never rolls it back. LISTEN/NOTIFY wakes it; a
 * poll keeps it correct. It also completes external tasks that any
 * saga opened (completeTask; complete-task.js from a shell). It speaks the protocol of one schema version and checks
 * it before it claims anything, at every poll, and when a statement meets a missing table (schema.js): on another
 * version it stops claiming and resolves `halted`.
 *
 * Left out, to stay small: child-failure handlers, loops (Flow), sleeps, finally parts, results read
 * from children, cooperation strategies, a TimeSource (it always uses the database's clock), settling children that
 * never started when it gives up while waiting (it waits for them instead), and deadlines other than checking the
 * happy-path and absolute deadlines when a run is claimed (no deadline timer while it waits for children: they
 * inherit the deadline and give up themselves), and saga limits (concurrency, rate): it refuses to start for a saga
 * registered with limits, since its plain claim would not honour them.
 */
const { Pool, Client } = require('pg');
const crypto = require('crypto');
const os = require('os');
const { AttemptLog, retryPolicy, delayAfter } = require('./attempts');
const { countOff, settleJoins } = require('./finishing');
const { completeTask } = require('./tasks');
const { TYPE, failure, failureOf, deadlineMissed } = require('./documents');
const { NAME, checkStepName, uuidV7 } = require('./names');
const { isDatabaseTrouble, postponeOrPark } = require('./trouble');
const { WOKEN, COMMITS_KEPT } = require('./wakes');
const { SchemaVersionError, checkSchema, mayBeSchemaChange } = require('./schema');

/**
 * Whether an advance reads the cancellation under the hierarchy's operator lock (commit_allowed, schema version 24):
 * when it commits the run, and when it leaves the run on the happy path waiting (for children, or until a time),
 * which only a cancellation's wake would move on (protocol.md: Cancellation and the work of a rollback).
 */
function excludesCancellation(next, finished) {
  return next.status === 'COMMITTED'
    || (next.checkCancellation && !finished && (next.status !== 'RUNNABLE' || next.delayMillis > 0));
}

const FINISHED = ['COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED'];

class Participant {
  /**
   * @param {object} options connectionString (or any pg pool options), schema (default 'coop'), engineId (default
   *   'node-<host>-<random>'), pollMillis (default 1000), log (default console.error)
   */
  constructor(options) {
    const { schema = 'coop', engineId, pollMillis = 1000, log = (line) => console.error(line), ...pg } = options;
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      throw new Error(`Schema name '${schema}' is not a lower-case SQL identifier`);
    }
    this.schema = schema;
    this.engineId = engineId || `node-${os.hostname()}-${crypto.randomBytes(3).toString('hex')}`;
    this.pollMillis = pollMillis;
    this.log = log;
    this.pgOptions = pg;
    this.sagas = new Map();
    this.draining = new Map(); // saga name -> { running, again }
    this.attempts = new AttemptLog(this);
    /** Resolved with the SchemaVersionError when the participant stopped because its schema changed (see halt). */
    this.halted = new Promise((resolve) => { this.resolveHalted = resolve; });
  }

  /**
   * Defines a saga: a name, the topic it handles, and its steps, each { name, run(step), compensate(step, cause),
   * retry } (compensate and retry optional; retry: see attempts.js). A step receives { payload, client,
   * launch(topic, payload), runId, messageId, saga, step, iteration, attempt, context } (client: the transaction's pg
   * client; set step.result to return a JSON value to the parent); it may throw to fail. A compensation receives the
   * same (it cannot launch) and the failure compensated.
   */
  saga(name, topic, steps) {
    if (!NAME.test(name) || !NAME.test(topic)) {
      throw new Error(`Saga name '${name}' and topic '${topic}' must be 1-200 characters of [A-Za-z0-9._:/-], `
        + 'starting with a letter or digit');
    }
    if (!Array.isArray(steps) || steps.length === 0 || steps.some((s) => !s.name || typeof s.run !== 'function')) {
      throw new Error(`Saga '${name}' needs at least one step, each with a name and a run function`);
    }
    const names = new Set();
    for (const { name: step } of steps) checkStepName(name, step, names);
    this.sagas.set(name, { name, topic, steps: steps.map((s) => ({ ...s, retry: retryPolicy(s.name, s.retry) })) });
    return this;
  }

  /** Registers the sagas, listens for wake-ups, and starts claiming. */
  async start() {
    this.pool = new Pool({ max: 4, ...this.pgOptions });
    this.pool.on('error', (e) => this.log(`coop: an idle connection failed (${e.message})`)); // else it would crash
    await checkSchema(this); // before it registers or claims anything (schema.js)
    // one statement per saga, in order of saga name: participants starting together take the rows in one order
    for (const saga of [...this.sagas.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      await this.register(saga);
    }
    await this.pool.query(this.sql(`
      INSERT INTO {schema}.engine (id, name, host, sagas, versions)
      VALUES ($1, 'node-participant', $2, $3::text[], $4::text[])`),
    [this.engineId, os.hostname(), [...this.sagas.keys()], [...this.sagas.keys()].map((s) => `${s}@${VERSION}`)]);
    this.listener = new Client(this.pgOptions);
    this.listener.on('notification', (n) => this.notified(n.payload));
    this.listener.on('error', (e) => this.log(`coop: listener failed (${e.message}); polling only`));
    await this.listener.connect();
    await this.listener.query(`LISTEN "coop_${this.schema}"`);
    this.poller = setInterval(() => this.poll(), this.pollMillis);
    this.sagas.forEach((s) => this.wake(s.name));
    return this;
  }

  /**
   * Registers the saga for its topic and its version (protocol.md, "Registering"): nothing is written when the saga
   * name is registered for another topic, and the participant refuses to start, as a Java engine does.
   */
  async register(saga) {
    const { rows } = await this.pool.query(this.sql(`
      WITH reg AS (
        INSERT INTO {schema}.saga_registration (saga, topic, last_engine, version) VALUES ($1, $2, $3, $4::int)
        ON CONFLICT (saga) DO UPDATE SET last_engine = EXCLUDED.last_engine, last_seen_at = statement_timestamp(),
               version = greatest(saga_registration.version, EXCLUDED.version)
         WHERE saga_registration.topic = EXCLUDED.topic
        RETURNING topic, version, concurrency, rate_limit, rate_period_ms
      ), ver AS ( -- the version of the steps this participant implements (protocol.md: saga_version)
        INSERT INTO {schema}.saga_version (saga, version, last_engine, first_step, compensating_steps)
        SELECT $1, $4::int, $3, $5, $6::text[] WHERE EXISTS (SELECT 1 FROM reg)
        ON CONFLICT (saga, version) DO UPDATE SET last_engine = EXCLUDED.last_engine,
               last_seen_at = statement_timestamp(), first_step = EXCLUDED.first_step,
               compensating_steps = EXCLUDED.compensating_steps
      )
      SELECT topic, version, concurrency, rate_limit, rate_period_ms FROM reg`),
    [saga.name, saga.topic, this.engineId, VERSION, saga.steps[0].name,
      // the steps whose rollback runs code (no finally parts here): trees leave out the others' 'Rollback of' rows
      saga.steps.filter((s) => s.compensate).map((s) => s.name)]);
    if (rows.length === 0) {
      const taken = (await this.pool.query(this.sql('SELECT topic FROM {schema}.saga_registration WHERE saga = $1'),
        [saga.name])).rows[0];
      throw new Error(`Saga '${saga.name}' is registered for topic '${taken ? taken.topic : '?'}' in schema `
        + `'${this.schema}', not for topic '${saga.topic}'; retire it first (CoopClient.retireSaga) or choose another `
        + 'saga name');
    }
    // saga limits (protocol.md: Saga limits) are not implemented here: its plain claim would ignore them
    if (rows[0].concurrency !== null || rows[0].rate_limit !== null) {
      throw new Error(`Saga '${saga.name}' is registered with limits (concurrency ${rows[0].concurrency}, rate `
        + `${rows[0].rate_limit} per ${rows[0].rate_period_ms} ms), which this participant does not implement`);
    }
  }

  /** Stops claiming, ends the listener and the pool; once, however often it is called. */
  stop() {
    this.stopping ??= this.stopOnce();
    return this.stopping;
  }

  async stopOnce() {
    clearInterval(this.poller);
    this.stopped = true;
    await this.listener?.end().catch(() => {});
    await this.pool?.query(this.sql('UPDATE {schema}.engine SET stopped_at = statement_timestamp() WHERE id = $1'),
      [this.engineId]).catch(() => {});
    await this.pool?.end();
  }

  /** Every pollMillis: the schema is still the one it speaks (schema.js), then a claim for each saga. */
  poll() {
    checkSchema(this).then(() => {
      this.checkFailing = false;
      this.sagas.forEach((s) => this.wake(s.name));
    }, (e) => this.halt(e));
  }

  /**
   * Stops claiming for good when the schema is not at the version it speaks (a migration ran under it): logs why and
   * resolves `halted` with the error, for the process to exit. Other errors of the check are database trouble: the
   * next poll checks again.
   */
  halt(e) {
    if (!(e instanceof SchemaVersionError)) { // said once, until a check succeeds again
      if (!this.checkFailing) this.log(`coop: the schema check failed (${e.message}); checking again at every poll`);
      this.checkFailing = true;
      return;
    }
    if (this.stopped) return;
    this.log(`coop: stops claiming: ${e.message}`);
    this.stop().catch(() => {}).finally(() => this.resolveHalted(e));
  }

  /** A notification names a saga ("<saga>") or a saga due later ("<saga> <milliseconds>"); '#...' is not ours. */
  notified(payload) {
    const [saga, millis] = payload.split(' ');
    if (!this.sagas.has(saga)) return;
    if (millis === undefined) this.wake(saga);
    else setTimeout(() => this.wake(saga), Number(millis)).unref();
  }

  /** Claims and executes runs of the saga until none is runnable; one drain per saga at a time. */
  wake(name) {
    const state = this.draining.get(name) || { running: false, again: false };
    this.draining.set(name, state);
    if (state.running) {
      state.again = true;
      return;
    }
    state.running = true;
    (async () => {
      do {
        state.again = false;
        while (!this.stopped && await this.executeOne(this.sagas.get(name))) { /* next run */ }
      } while (state.again && !this.stopped);
      state.running = false;
    })().catch((e) => {
      state.running = false;
      this.log(`coop: saga ${name}: ${e.stack}`);
    });
  }

  /** One transaction: claim a run of the saga and move it on. Returns whether a run was claimed. */
  async executeOne(saga) {
    const c = await this.pool.connect();
    let run = null;
    try {
      await c.query('BEGIN');
      run = await this.claim(c, DUE, [saga.name, this.engineId]);
      if (!run) {
        await c.query('ROLLBACK');
        return false;
      }
      await this.execute(c, saga, run);
      await c.query('COMMIT');
      return true;
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      if (run && (e instanceof ClaimLostError || e.code === 'CP002')) {
        await this.claimLost(c, saga, run, e);
        return true;
      }
      if (mayBeSchemaChange(e)) { // a migration under it is not database trouble: it stops (schema.js)
        const changed = await checkSchema(this, c).then(() => null, (why) => why);
        if (changed) {
          this.halt(changed);
          return false;
        }
      }
      if (run && e.code !== 'CP001') { // CP001: cancelled while the step ran; the next claim gives up
        await this.troubled(c, run, e).catch((again) => this.log(`coop: run ${run.id}: ${again.message}`));
      }
      return run !== null && e.code === 'CP001';
    } finally {
      c.release();
    }
  }

  /**
   * User code ended the claiming transaction (COMMIT, ROLLBACK or END on its client): the step fails, or, on the
   * rollback path, the rollback. In a new transaction, and only if nobody moved the run meanwhile.
   */
  async claimLost(c, saga, run, e) {
    this.log(`coop: run ${run.id} (saga ${saga.name}): ${e.message}`);
    await c.query('BEGIN');
    // a COMMIT in the step committed what the claim wrote: the claim writes SEEN only if it is not in the log
    const again = await this.claim(c, UNCHANGED, [run.id, run.version, this.engineId]);
    const lost = failureOf(e instanceof ClaimLostError ? e : new ClaimLostError(), this.source(run));
    if (again?.phase === 'HAPPY') {
      await this.startRollback(c, saga, again, saga.steps[again.step_index]?.name ?? null, lost);
    } else if (again) { // only a compensation runs user code on the rollback path: 'Rollback of <x>' failed
      const step = again.rollback_stage === 'COMPENSATE'
        ? `Rollback of ${await this.instanceName(c, saga, again, again.rollback_seq)}` : null;
      const why = JSON.stringify({ ...lost, causes: [JSON.parse(again.rollback_cause)] });
      await this.advance(c, again, [['ROLLBACK_FAILED', step, why]], { status: 'ROLLBACK_FAILED', failure: why });
    }
    await c.query('COMMIT');
  }

  // ---- the happy path

  async execute(c, saga, run) {
    if (run.phase === 'ROLLBACK') return this.rollbackStep(c, saga, run);
    if (run.pending_children > 0) return this.waitAgain(c, run); // woken early (a cancellation) while children run
    const giveUp = run.cancellation ? JSON.parse(run.cancellation) : deadlineMissed(run, this.source(run));
    if (giveUp) {
      const gaveUp = failure(`Gave up: ${giveUp.message}`, TYPE.gaveUp, this.source(run), [giveUp]);
      return this.startRollback(c, saga, run, null, gaveUp);
    }
    const step = saga.steps[run.step_index];
    if (run.step_index > saga.steps.length || (run.next_step !== null && run.next_step !== step?.name)) {
      const why = failure(`Saga '${saga.name}' has no step '${run.next_step}' at position ${run.step_index + 1}`
        + '; was the step removed or renamed while this run waited?', 'dev.coop.UnknownStep', this.source(run), []);
      return this.park(c, run, run.next_step, JSON.stringify(why), false);
    }
    if (run.failed_children > 0) return this.childrenFailed(c, saga, run);
    if (!step) { // the last step ran and its children committed
      return this.advance(c, run, [['COMMITTED', saga.steps.at(-1).name]], { status: 'COMMITTED' });
    }
    return this.runStep(c, saga, run, step);
  }

  async runStep(c, saga, run, step) {
    const iterations = [...(run.iterations || [])];
    while (iterations.length <= run.step_index) iterations.push(0);
    iterations[run.step_index] += 1;
    const ctx = this.stepContext(c, saga, run, step.name, iterations[run.step_index]);
    // an operator marked the parked step done (resolution SKIP): it counts as executed, without running
    const thrown = run.resolution === 'SKIP' ? null : await this.userCode(c, () => step.run(ctx));
    if (thrown) return this.stepFailed(c, saga, run, step, thrown);
    await this.attempts.ended(c, run, step.name); // after many attempts: the last retried one
    const children = await this.emit(c, saga, run, step.name, ctx.launched);
    const last = run.step_index === saga.steps.length - 1;
    const status = children > 0 ? 'WAITING' : last ? 'COMMITTED' : 'RUNNABLE';
    const events = [['SUSPENDED', step.name]];
    if (status === 'COMMITTED') events.push(['COMMITTED', step.name]);
    return this.advance(c, run, events, {
      status,
      step_index: run.step_index + 1,
      next_step: last ? null : saga.steps[run.step_index + 1].name,
      final_step: last ? step.name : '', // '' clears a final step an earlier instance set
      steps_done: run.steps_done + 1,
      iterations,
      attempt: 1,
      pending_children: children,
      result: ctx.result === undefined ? null : JSON.stringify(ctx.result),
      instance: { seq: run.steps_done, index: run.step_index, iteration: iterations[run.step_index] },
      checkCancellation: true,
    });
  }

  /**
   * The step threw (its writes are undone): database trouble met by its own statements retries the run later
   * (trouble.js); a cancelled scope gives up; else its retry policy runs it again later, or parks the run when its
   * attempts are exhausted and it says so; else the run rolls back.
   */
  async stepFailed(c, saga, run, step, thrown) {
    // its own statement met a deadlock, a serialization failure, a lost connection...: retried later, under the lock
    if (isDatabaseTrouble(thrown)) return postponeOrPark(this, c, run, step.name, thrown, true);
    this.log(`coop: step '${step.name}' of run ${run.id} (saga ${saga.name}) failed on attempt ${run.attempt}: `
      + `${thrown.message}`);
    const cancellation = await this.cancellation(c, run);
    const why = cancellation
      ? failure(`Gave up: ${cancellation.message}`, TYPE.gaveUp, this.source(run), [cancellation])
      : failureOf(thrown, this.source(run));
    const json = JSON.stringify(why);
    const policy = cancellation || thrown instanceof ClaimLostError ? null : step.retry;
    if (policy && run.attempt < policy.attempts) {
      await this.attempts.failed(c, run, step.name, json);
      return this.advance(c, run, [], { attempt: run.attempt + 1, delayMillis: delayAfter(policy, run.attempt),
        failure: json, checkCancellation: true });
    }
    if (policy && policy.park) return this.park(c, run, step.name, json, true);
    await this.attempts.ended(c, run, step.name);
    return this.startRollback(c, saga, run, step.name, why);
  }

  /**
   * Parks the run for an operator (protocol.md, the park advance): PARKED in the log (after the closing attempt of a
   * long series), then the run PARKED with why, everything else as claimed. An operator's retryNow or markStepDone
   * (CoopClient) makes it runnable again.
   */
  async park(c, run, step, why, afterFailure) {
    this.log(`coop: run ${run.id} (saga ${run.saga}) parked at '${step}': ${JSON.parse(why).message}`);
    await this.attempts.parked(c, run, step, why);
    return this.advance(c, run, [], { status: 'PARKED', failure: why, checkCancellation: afterFailure });
  }

  /**
   * Claimed while children it waits for still run: back to WAITING (the barrier re-check), nothing else changed; on
   * the rollback path its failure stays the rollback cause, as every advance there sets it.
   */
  waitAgain(c, run) {
    return this.advance(c, run, [], { status: 'WAITING', pending_children: run.pending_children,
      keepFailedChildren: true, failure: run.phase === 'ROLLBACK' ? run.rollback_cause : null });
  }

  /** Runs user code under a savepoint: when it throws, its writes are undone and the run's row lock is kept. */
  async userCode(c, code) {
    await c.query('SAVEPOINT coop_step');
    try {
      await code();
    } catch (e) {
      await c.query('ROLLBACK TO SAVEPOINT coop_step').catch(savepointLost);
      return e instanceof Error ? e : new Error(String(e));
    }
    await c.query('RELEASE SAVEPOINT coop_step').catch(savepointLost);
    return null;
  }

  stepContext(c, saga, run, stepName, iteration, mayLaunch = true) {
    const launched = [];
    return {
      payload: JSON.parse(run.payload), client: c, runId: run.id, messageId: run.message_id, saga: saga.name,
      step: stepName, iteration, attempt: run.attempt, launched,
      context: run.context === null ? {} : JSON.parse(run.context),
      /** Launches a message in this run's scope: the next step starts when every run of it finished. */
      launch(topic, payload) {
        if (!mayLaunch) throw new Error(`${stepName}: this participant does not launch from compensations`);
        if (!NAME.test(topic)) {
          throw new Error(`Topic '${topic}' must be 1-200 characters of [A-Za-z0-9._:/-], starting with a letter `
            + 'or digit');
        }
        const id = uuidV7();
        launched.push({ id, topic, payload: JSON.stringify(payload) });
        return id;
      },
    };
  }

  /** The runs caused by the latest step did not all commit: roll back (no child-failure handlers here). */
  async childrenFailed(c, saga, run) {
    const seq = run.steps_done - 1;
    const name = (await this.instanceName(c, saga, run, seq));
    const { rows } = await c.query(this.sql(`
      SELECT status, coalesce(failure, '{}'::jsonb)::text AS failure FROM {schema}.run
       WHERE parent_id = $1 AND parent_seq = $2 AND status <> 'COMMITTED' AND awaited ORDER BY created_at`),
    [run.id, seq]);
    const rollbackFailed = rows.some((r) => r.status === 'ROLLBACK_FAILED');
    const message = `${rows.length} run${rows.length === 1 ? '' : 's'} caused by step '${name}' `
      + (rollbackFailed ? 'failed to roll back' : 'rolled back');
    const why = failure(message, rollbackFailed ? TYPE.childRollbackFailed : TYPE.childRolledBack, this.source(run),
      rows.map((r) => JSON.parse(r.failure)));
    return this.startRollback(c, saga, run, name, why);
  }

  // ---- the rollback path

  /** ROLLING_BACK with the failure, then finish at once (nothing completed) or go backwards over the instances. */
  async startRollback(c, saga, run, stepName, why) {
    const json = JSON.stringify(why);
    const events = [['ROLLING_BACK', stepName, json]];
    const seq = run.steps_done - 1;
    if (seq < 0) return this.finishRollback(c, saga, run, events, `Rollback of ${saga.steps[0].name}`, json);
    return this.advance(c, run, events, rollingBack(seq, 'CHILDREN', json));
  }

  async rollbackStep(c, saga, run) {
    const cause = run.rollback_cause;
    if (run.pending_children > 0) return this.waitAgain(c, run); // woken early while child rollbacks run
    const seq = run.rollback_seq;
    if (run.rollback_stage === 'START') {
      const events = [['ROLLING_BACK', null, cause]];
      if (seq < 0) return this.finishRollback(c, saga, run, events, `Rollback of ${saga.steps[0].name}`, cause);
      return this.advance(c, run, events, rollingBack(seq, 'CHILDREN', cause));
    }
    if (run.rollback_stage === 'FINISH') {
      return this.finishRollback(c, saga, run, [], `Rollback of ${saga.steps[0].name}`, cause);
    }
    const name = await this.instanceName(c, saga, run, seq);
    if (run.rollback_stage === 'CHILDREN') return this.rollBackChildren(c, run, seq, name, cause);
    if (run.failed_children > 0) return this.childRollbacksFailed(c, run, seq, name, cause);
    return this.compensate(c, saga, run, seq, name, cause);
  }

  /** Asks the committed runs caused by instance seq to roll back, and waits for them. */
  async rollBackChildren(c, run, seq, name, cause) {
    const step = `Rollback of ${name} (rolling back child scopes)`;
    const parentSaidSo = JSON.stringify(failure(`${run.saga} is rolling back`, TYPE.parentSaidSo, this.source(run),
      [JSON.parse(cause)]));
    const context = JSON.stringify({ ...JSON.parse(run.context || '{}'), ...JSON.parse(run.parent_context || '{}') });
    const { rows } = await c.query(this.sql(`
      WITH targets AS (
        SELECT r.id, r.message_id, r.status, r.finished_at FROM {schema}.run r WHERE r.parent_id = $1 AND r.parent_seq = $2
      ), emitted AS (
        INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, root_id)
        SELECT m.message_id, 'ROLLBACK_EMITTED', $3, $4, $5, $6::uuid[], $7::jsonb, ($6::uuid[])[1]
          FROM (SELECT DISTINCT message_id FROM targets) m ORDER BY m.message_id
      ), woken AS (
        UPDATE {schema}.run r
           SET phase = 'ROLLBACK', status = 'RUNNABLE', rollback_stage = 'START', parent_context = $8,
               awaited = true, rollback_seq = r.steps_done - 1, rollback_cause = $7::jsonb,
               runnable_at = statement_timestamp(), finished_at = NULL, pending_children = 0, failed_children = 0,
               version = r.version + 1
          FROM targets t WHERE r.id = t.id AND t.status = 'COMMITTED' AND r.saga <> '~external-task'
        RETURNING r.saga, r.status, r.runnable_at, t.finished_at AS committed_at
      ), ${COMMITS_KEPT('woken')}, ${WOKEN('woken', 'notified')}
      SELECT count(*)::int AS n FROM woken, notified`),
    [run.id, seq, run.saga, this.engineId, step, run.lineage, parentSaidSo, context === '{}' ? null : context]);
    const children = rows[0].n;
    return this.advance(c, run, [['SUSPENDED', step]],
      { ...rollingBack(seq, 'COMPENSATE', cause, children), status: children > 0 ? 'WAITING' : 'RUNNABLE' });
  }

  async compensate(c, saga, run, seq, name, cause) {
    const step = `Rollback of ${name}`;
    const { rows } = await c.query(
      this.sql(`SELECT instance, iteration FROM {schema}.event
                 WHERE message_id = $1 AND saga = $2 AND step_seq = $3 LIMIT 1`), [run.message_id, run.saga, seq]);
    const definition = saga.steps[rows[0].instance];
    const ctx = this.stepContext(c, saga, run, step, rows[0].iteration, false);
    ctx.context = { ...ctx.context, ...JSON.parse(run.parent_context || '{}') };
    const thrown = definition.compensate
      ? await this.userCode(c, () => definition.compensate(ctx, JSON.parse(cause)))
      : null;
    if (thrown && isDatabaseTrouble(thrown)) return postponeOrPark(this, c, run, step, thrown, true);
    if (thrown) {
      this.log(`coop: compensation '${step}' of run ${run.id} (saga ${saga.name}) failed: ${thrown.message}`);
      const own = failureOf(thrown, this.source(run));
      const why = JSON.stringify({ ...own, causes: [...own.causes, JSON.parse(cause)] });
      return this.advance(c, run, [['ROLLBACK_FAILED', step, why]], { status: 'ROLLBACK_FAILED', failure: why });
    }
    const events = [['SUSPENDED', step]];
    if (seq === 0) return this.finishRollback(c, saga, run, events, step, cause);
    return this.advance(c, run, events, rollingBack(seq - 1, 'CHILDREN', cause));
  }

  async childRollbacksFailed(c, run, seq, name, cause) {
    const { rows } = await c.query(this.sql(`
      SELECT failure::text AS failure FROM {schema}.run
       WHERE parent_id = $1 AND parent_seq = $2 AND status = 'ROLLBACK_FAILED' AND awaited ORDER BY created_at`),
    [run.id, seq]);
    const causes = [...rows.map((r) => JSON.parse(r.failure)), JSON.parse(cause)];
    const failed = causes.length - 1; // protocol.md, "The failure document": "1 run", "2 runs"
    const why = JSON.stringify(failure(
      `The rollback of ${failed} ${failed === 1 ? 'run' : 'runs'} caused by '${name}' failed`,
      TYPE.childRollbackFailed, this.source(run), causes));
    return this.advance(c, run, [['ROLLBACK_FAILED', `Rollback of ${name} (rolling back child scopes)`, why]],
      { status: 'ROLLBACK_FAILED', failure: why });
  }

  /** ROLLED_BACK; or ROLLBACK_FAILED when what is compensated is a child's failed rollback. */
  finishRollback(c, saga, run, events, step, cause) {
    const failed = JSON.parse(cause).type === TYPE.childRollbackFailed;
    events.push(failed ? ['ROLLBACK_FAILED', step, cause] : ['ROLLED_BACK', step]);
    return this.advance(c, run, events,
      { ...rollingBack(-1, null, cause), status: failed ? 'ROLLBACK_FAILED' : 'ROLLED_BACK' });
  }

  // ---- statements

  /**
   * The claim: a runnable run (DUE: the saga's due first; UNCHANGED: a run by id and version), locked; SEEN on its
   * first step unless the log has it (a step that ran COMMIT made it durable); the cancellation of its scope. Only
   * this participant's sagas are claimed.
   */
  async claim(c, selection, params) {
    const { rows } = await c.query(this.sql(`
      WITH claimed AS (
        SELECT r.id, r.root_id, r.saga, r.message_id, r.lineage, r.parent_id, r.awaited, r.phase, r.step_index, r.next_step,
               r.steps_done, r.iterations, r.failed_children, r.pending_children, r.rollback_seq, r.rollback_stage,
               r.rollback_cause::text AS rollback_cause, r.context, r.parent_context, r.version, r.attempt,
               r.resolution, r.retries,
               r.started_at IS NOT NULL AS started, clock_timestamp() AS claimed_at, r.cancel_from, r.ordering_key
          FROM {schema}.run r
         WHERE ${selection}
         LIMIT 1
           FOR UPDATE SKIP LOCKED
      ), seen AS (
        INSERT INTO {schema}.event (message_id, type, saga, engine, lineage, root_id)
        SELECT message_id, 'SEEN', saga, $${params.length}, lineage, root_id FROM claimed
         WHERE NOT started AND {schema}.seen_missing(message_id, saga) -- a fresh snapshot, after the lock (v16)
      )
      SELECT c.*, m.topic, m.payload::text AS payload, pg_current_xact_id()::text AS xact,
             (SELECT x.failure::text FROM {schema}.cancellation x -- the scopes that reach it (v24: cancel_from)
               WHERE x.root_id = c.root_id AND x.scope_id = ANY(c.lineage[coalesce(c.cancel_from, 1):])
               ORDER BY cardinality(x.lineage) LIMIT 1) AS cancellation
        FROM claimed c JOIN {schema}.message m ON m.root_id = c.root_id AND m.id = c.message_id`), params);
    return rows[0] || null;
  }

  async cancellation(c, run) {
    const { rows } = await c.query(this.sql(`
      SELECT failure::text AS failure FROM {schema}.cancellation
       WHERE scope_id = ANY(($1::uuid[])[coalesce($2::int, 1):])
       ORDER BY cardinality(lineage) LIMIT 1`), [run.lineage, run.cancel_from]);
    return rows[0] ? JSON.parse(rows[0].failure) : null;
  }

  /** The log name of the executed instance seq (this participant has no child-failure handler instances). */
  async instanceName(c, saga, run, seq) {
    const { rows } = await c.query(this.sql(`SELECT instance FROM {schema}.event
                                              WHERE message_id = $1 AND saga = $2 AND step_seq = $3 LIMIT 1`),
      [run.message_id, run.saga, seq]);
    if (!rows[0] || rows[0].instance < 0) throw new Error(`Run ${run.id} has no step instance ${seq} of this saga`);
    return saga.steps[rows[0].instance].name;
  }

  /** The launch: messages, EMITTED events, and a run per saga registered for each topic. Returns the runs created. */
  async emit(c, saga, run, stepName, launched) {
    let runs = 0;
    for (const m of launched) {
      const { rows } = await c.query(this.sql(`
        WITH msg AS (
          INSERT INTO {schema}.message (id, topic, payload, created_at, root_id)
          VALUES ($1, $2, $3::jsonb, statement_timestamp(), ($7::uuid[])[1])
        ), emitted AS (
          INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, context, root_id)
          VALUES ($1, 'EMITTED', $4, $5, $6, $7::uuid[], $8, ($7::uuid[])[1])
        ), runs AS (
          INSERT INTO {schema}.run (id, message_id, saga, saga_version, lineage, parent_id, parent_seq, status, context,
                                    runnable_at, cancel_from, root_id)
          SELECT x.id, $1, x.saga, x.version, $7::uuid[] || ARRAY[x.id] /* not || x.id: see EmitSql.EMIT */, $9::uuid, $10::int, 'RUNNABLE', $8, statement_timestamp(),
                 $11::int /* launched on the happy path: the launching run's (v24) */, ($7::uuid[])[1]
            FROM (SELECT {schema}.uuid_v7() AS id, reg.saga, reg.version FROM {schema}.saga_registration reg
                   WHERE reg.topic = $2 ORDER BY reg.saga) x
          RETURNING saga, status, runnable_at
        ), ${WOKEN('runs')}
        SELECT count(*)::int AS n FROM runs, woken`),
      [m.id, m.topic, m.payload, saga.name, this.engineId, stepName, run.lineage, run.context, run.id, run.steps_done,
        run.cancel_from]);
      runs += rows[0].n;
    }
    return runs;
  }

  /**
   * Writes the events and moves the run (only in the transaction that claimed it, and on the happy path only if
   * its scope was not cancelled meanwhile); when it finished, counts it off at its parent and settles joins.
   */
  async advance(c, run, events, change) {
    const next = {
      status: 'RUNNABLE', phase: run.phase, step_index: run.step_index, next_step: run.next_step, final_step: null,
      steps_done: run.steps_done, iterations: run.iterations, attempt: run.attempt, pending_children: 0,
      keepFailedChildren: false, rollback_seq: run.rollback_seq, rollback_stage: run.rollback_stage,
      rollback_cause: run.rollback_cause, delayMillis: 0, result: null, failure: null, checkCancellation: false,
      ...change,
    };
    // an executed instance is carried by the SUSPENDED written first (protocol.md: the step log)
    const instance = next.instance ?? { seq: null, index: null, iteration: null };
    await c.query(this.sql(`
      INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at,
                                  step_seq, instance, iteration, root_id)
      SELECT $1, e.type, $2, $3, e.step, $4::uuid[], e.exception::jsonb, $5,
             CASE WHEN e.n = 1 THEN $9::int END, CASE WHEN e.n = 1 THEN $10::int END, CASE WHEN e.n = 1 THEN $11::int END,
             ($4::uuid[])[1]
        FROM unnest($6::text[], $7::text[], $8::text[]) WITH ORDINALITY AS e(type, step, exception, n)
       ORDER BY e.n`),
    [run.message_id, run.saga, this.engineId, run.lineage, run.claimed_at, events.map((e) => e[0]),
      events.map((e) => e[1] ?? null), events.map((e) => e[2] ?? null), instance.seq, instance.index,
      instance.iteration]);
    const finished = FINISHED.includes(next.status);
    const { rows: moved } = await c.query(this.sql(`
      WITH advanced AS (
      UPDATE {schema}.run
         SET status = $2::text, phase = $3, step_index = $4, next_step = $5, final_step = nullif(coalesce($6, final_step), ''),
             steps_done = $7, iterations = $8::int[], attempt = $19::int, pending_children = $9::int,
             failed_children = CASE WHEN $20::boolean THEN failed_children ELSE 0 END,
             waiting_since = CASE WHEN $9::int = 0 THEN NULL ELSE coalesce(waiting_since, statement_timestamp()) END,
             rollback_seq = $10, rollback_stage = $11, rollback_cause = $12::jsonb, resolution = NULL,
             runnable_at = statement_timestamp() + $21::bigint * interval '1 millisecond',
             result = coalesce($13, result), failure = $14::jsonb,
             started_at = coalesce(started_at, $15), finished_at = CASE WHEN $16 THEN statement_timestamp() END,
             retries = 0, reserved_until = NULL, version = version + 1
       WHERE id = $1
         AND CASE WHEN pg_current_xact_id() = $17::xid8 THEN true ELSE {schema}.claim_lost() END
         AND CASE WHEN $22 /* it commits, or waits on the happy path: excludes a cancellation (v24) */
                  THEN {schema}.commit_allowed(lineage[1], lineage[coalesce(cancel_from, 1):], true)
                  WHEN $18 AND EXISTS (SELECT 1 FROM {schema}.cancellation x
                                        WHERE x.scope_id = ANY(lineage[coalesce(cancel_from, 1):]))
                  THEN {schema}.assert_not_cancelled(lineage[coalesce(cancel_from, 1):]) ELSE true END
      RETURNING saga, status, runnable_at
      ), ${WOKEN('advanced')}
      SELECT count(*)::int AS n FROM advanced, woken`),
    [run.id, next.status, next.phase, next.step_index, next.next_step, next.final_step, next.steps_done,
      next.iterations, next.pending_children, next.rollback_seq, next.rollback_stage, next.rollback_cause,
      next.result, next.failure, run.claimed_at, finished, run.xact, next.checkCancellation, next.attempt,
      next.keepFailedChildren, next.delayMillis, excludesCancellation(next, finished)]);
    if (!moved[0] || moved[0].n !== 1) throw new Error(`Run ${run.id} was not updated`);
    if (finished && run.ordering_key !== null) { // its key's next run goes on (protocol.md, Ordering keys)
      await c.query(this.sql("SELECT {schema}.release_ordering_key_after($1, $2, '{}')"), [run.saga, run.ordering_key]);
    }
    if (finished) await this.finished(c, run, next.status);
  }

  /** Counts a finished run off at its parent (committing parents whose last step ran), then settles joins. */
  async finished(c, run, status) {
    await settleJoins(this, c, [run.message_id, ...await countOff(this, c, run, status, this.engineId)]);
  }

  /**
   * Completes an external task a Java (or any) saga opened, by its token or correlation key (tasks.js). Returns
   * 'SETTLED', or 'ALREADY_SETTLED' when the task was completed before with the same result; throws when it was
   * settled otherwise or does not exist.
   */
  completeTask(tokenOrKey, result, actor = this.engineId) {
    return completeTask(this, tokenOrKey, result, actor);
  }

  /**
   * Database trouble (a statement of the participant's own failed; its transaction was rolled back): in a new
   * transaction, the run waits (jittered exponential backoff) unless it moved meanwhile; after MAX_RETRIES in a row it
   * is parked instead, with a PARKED event (protocol.md, Database trouble; trouble.js).
   */
  async troubled(c, run, e) {
    // the step it was at (next_step is null until the run's first advance); on the rollback path, next_step as claimed
    const step = run.phase === 'HAPPY' ? this.sagas.get(run.saga)?.steps[run.step_index]?.name ?? run.next_step
      : run.next_step;
    await c.query('BEGIN');
    try {
      await postponeOrPark(this, c, run, step, e, false);
      await c.query('COMMIT');
    } catch (again) {
      await c.query('ROLLBACK').catch(() => {});
      throw again;
    }
  }

  source(run) {
    return `${run.saga}[${this.engineId}]`;
  }

  sql(text) {
    return text.replaceAll('{schema}', this.schema);
  }
}

/**
 * The version of the sagas this participant implements (protocol.md: saga versions): it claims only runs of this
 * version and leaves runs of other versions to participants that have them.
 */
const VERSION = 1;

/** Database trouble on this many transactions of a run in a row parks it (as Java's engine does). */

/** The claim's selections (the engine id is the last parameter of each). */
const DUE = `r.saga = $1 AND r.saga_version = ${VERSION} AND r.status = 'RUNNABLE'
   AND r.priority IN (10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10)
   AND r.runnable_at <= statement_timestamp()
   AND (r.reserved_until IS NULL OR r.reserved_until < statement_timestamp())
   ORDER BY r.priority DESC, r.runnable_at`;
const UNCHANGED = "r.id = $1 AND r.version = $2 AND r.status = 'RUNNABLE'";

/** Thrown when step code ended the transaction that claimed its run (protocol.md: claim_lost(), CP002). */
class ClaimLostError extends Error {
  constructor() {
    super('The step ended the transaction that claimed its run (COMMIT, ROLLBACK or END on its connection); '
      + 'the participant commits or rolls back a step\'s transaction itself, so this step cannot be committed');
    this.name = 'ClaimLostError';
  }
}

/**
 * The step's savepoint could not be used: gone with the transaction the code ended (no transaction, 25P01, or another
 * one without it, 3B001), so the claim is lost; any other error (a lost connection) is database trouble.
 */
function savepointLost(e) {
  throw e.code === '25P01' || e.code === '3B001' ? new ClaimLostError() : e;
}

/** The rollback path at instance seq and stage, waiting for children. */
function rollingBack(seq, stage, cause, children = 0) {
  return { phase: 'ROLLBACK', rollback_seq: seq, rollback_stage: stage, rollback_cause: cause,
    pending_children: children, failure: cause };
}

module.exports = { Participant, failureOf };
