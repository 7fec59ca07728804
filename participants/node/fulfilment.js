'use strict';
/*
 * The example participant: saga 'node-fulfilment' on topic 'fulfilment-requested', run by Node.js in hierarchies
 * that Java sagas start (NodeParticipantTest). Connects with libpq's variables (PGHOST, PGPORT, PGDATABASE, PGUSER,
 * PGPASSWORD); COOP_SCHEMA names the schema (default 'coop'). Prints 'ready' once it listens; stops on SIGTERM.
 *
 *   reserve  writes a ledger row, launches 'stock-checked' (a Java saga handles it) and waits for it;
 *            fails with an OutOfStockError when the payload asks for more than 10; compensated by an undo row
 *            (the compensation fails for orders named 'lost-...'; the step ends its transaction for 'rogue-...',
 *            the compensation for 'sly-...'; for 'contended-...' the compensation meets a deadlock, SQLSTATE 40P01,
 *            until the ledger says 'calm')
 *   confirm  writes a ledger row that says how its children had ended when it started (the barrier)
 */
const { Participant } = require('./coop');

class OutOfStockError extends Error {
  constructor(message) {
    super(message);
    this.name = 'OutOfStockError';
  }
}

async function reserve(step) {
  const { order, quantity } = step.payload;
  await step.client.query('INSERT INTO fulfilment_ledger (order_id, entry) VALUES ($1, $2)', [order, 'reserved']);
  if (order.startsWith('rogue-')) {
    await step.client.query('COMMIT'); // what a step must not do: the participant fails it (ClaimLostError)
  }
  if (quantity > 10) {
    throw new OutOfStockError(`Only 10 left of what order ${order} wants ${quantity} of`);
  }
  step.launch('stock-checked', { order });
}

async function undoReserve(step, cause) {
  if (step.payload.order.startsWith('contended-')) {
    const { rows } = await step.client.query(
      "SELECT 1 FROM fulfilment_ledger WHERE order_id = $1 AND entry = 'calm'", [step.payload.order]);
    if (rows.length === 0) { // its own statement meets a deadlock: database trouble, retried later
      await step.client.query(
        "DO $$ BEGIN RAISE EXCEPTION 'deadlock detected (a test)' USING ERRCODE = '40P01'; END $$");
    }
  }
  if (step.payload.order.startsWith('lost-')) {
    throw new Error(`The warehouse lost the reservation of order ${step.payload.order}`);
  }
  await step.client.query('INSERT INTO fulfilment_undo (who, order_id, why) VALUES ($1, $2, $3)',
    ['node-fulfilment', step.payload.order, cause.message]);
  if (step.payload.order.startsWith('sly-')) {
    await step.client.query('COMMIT'); // what a compensation must not do either: the rollback fails (ClaimLostError)
  }
}

async function confirm(step) {
  const { rows } = await step.client.query(
    "SELECT coalesce(string_agg(status, ',' ORDER BY status), 'none') AS children FROM coop.run WHERE parent_id = $1",
    [step.runId]);
  await step.client.query('INSERT INTO fulfilment_ledger (order_id, entry) VALUES ($1, $2)',
    [step.payload.order, `confirmed after children ${rows[0].children}`]);
}

async function main() {
  const participant = new Participant({ schema: process.env.COOP_SCHEMA || 'coop', pollMillis: 500 })
    .saga('node-fulfilment', 'fulfilment-requested', [
      { name: 'reserve', run: reserve, compensate: undoReserve },
      { name: 'confirm', run: confirm },
    ]);
  await participant.start();
  process.on('SIGTERM', () => participant.stop().finally(() => process.exit(0)));
  console.log('ready');
}

main().catch((e) => {
  console.error(e.stack);
  process.exit(1);
});
