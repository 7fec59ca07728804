'use strict';
/*
 * Sagas with retry policies: 'node-charge' on topic 'charge-requested' and 'node-refund' on 'refund-requested', run by
 * Node.js (NodeParkingTest). Connects
 * with libpq's variables (PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD); COOP_SCHEMA names the schema (default
 * 'coop'). Prints 'ready' once it listens; stops on SIGTERM.
 *
 *   charge  fails with a GatewayDownError until the ledger says the gateway is up for the order; tried 5 times in
 *           all, then the run is parked for an operator (CoopClient.retryNow or markStepDone resolve it); while the
 *           ledger says 'contended' (and not 'calm') for the order, its statement meets a deadlock (SQLSTATE 40P01)
 *   refund  always fails; tried 6 times in all, then the run rolls back
 */
const { Participant } = require('./coop');

class GatewayDownError extends Error {
  constructor(message) {
    super(message);
    this.name = 'GatewayDownError';
  }
}

async function charge(step) {
  const { order } = step.payload;
  const { rows } = await step.client.query('SELECT entry FROM charge_ledger WHERE order_id = $1', [order]);
  const ledger = rows.map((r) => r.entry);
  if (ledger.includes('contended') && !ledger.includes('calm')) {
    // the step's own statement meets a deadlock (raised here as PostgreSQL raises one): database trouble, which the
    // participant retries later without counting an attempt, not a failure of the step
    await step.client.query("DO $$ BEGIN RAISE EXCEPTION 'deadlock detected (a test)' USING ERRCODE = '40P01'; END $$");
  }
  if (!ledger.includes('gateway up')) {
    throw new GatewayDownError(`The payment gateway is down (order ${order}, attempt ${step.attempt})`);
  }
  await step.client.query("INSERT INTO charge_ledger (order_id, entry) VALUES ($1, 'charged')", [order]);
}

async function refund(step) {
  throw new GatewayDownError(`The refund gateway is down (order ${step.payload.order}, attempt ${step.attempt})`);
}

async function main() {
  const participant = new Participant({ schema: process.env.COOP_SCHEMA || 'coop', pollMillis: 500 })
    .saga('node-charge', 'charge-requested', [
      { name: 'charge', run: charge, retry: { attempts: 5, initialDelayMillis: 0, park: true } },
    ])
    .saga('node-refund', 'refund-requested', [
      { name: 'refund', run: refund, retry: { attempts: 6, initialDelayMillis: 0 } },
    ]);
  await participant.start();
  process.on('SIGTERM', () => participant.stop().finally(() => process.exit(0)));
  console.log('ready');
}

main().catch((e) => {
  console.error(e.stack);
  process.exit(1);
});
