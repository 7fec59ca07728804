'use strict';
/*
 * Completes an external task from Node.js: node complete-task.js <token-or-key> <result as JSON>. Connects with libpq's
 * variables (PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD); COOP_SCHEMA names the schema (default 'coop'). Prints
 * SETTLED or ALREADY_SETTLED; exits 1 with the reason when the task was settled otherwise or does not exist.
 */
const { Participant } = require('./coop');

async function main() {
  const [tokenOrKey, result] = process.argv.slice(2);
  const participant = new Participant({ schema: process.env.COOP_SCHEMA || 'coop' });
  try {
    console.log(await participant.completeTask(tokenOrKey, JSON.parse(result), 'node-complete-task'));
  } finally {
    await participant.pool.end();
  }
}

main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
