'use strict';
/*
 * The schema check (protocol.md, "The schema and its version"): the participant speaks the protocol of one schema
 * version, and claims nothing on any other. It checks before it registers or claims anything, again at every poll,
 * and again when one of its own statements fails as a migration under it would make it fail (a table, column or
 * function it names is gone); a schema at another version stops it, instead of being retried as database trouble
 * for ever.
 */

/** The schema version whose protocol this participant speaks; others are refused. */
const SCHEMA_VERSION = 31;

/** The schema is not (or no longer) at the version this participant speaks. */
class SchemaVersionError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SchemaVersionError';
  }
}

/** Throws a SchemaVersionError unless the participant's schema exists and is at SCHEMA_VERSION. */
async function checkSchema(participant, client = participant.pool) {
  const exists = (await client.query(participant.sql(
    "SELECT to_regclass('{schema}.schema_version') IS NOT NULL AS has_schema"))).rows[0].has_schema;
  const version = exists
    ? (await client.query(participant.sql('SELECT max(version) AS v FROM {schema}.schema_version'))).rows[0].v
    : null;
  if (version === null) {
    throw new SchemaVersionError(`There is no Coop schema '${participant.schema}' (no table `
      + `${participant.schema}.schema_version); a Java engine or client, or coop migrate, creates it`);
  }
  if (version !== SCHEMA_VERSION) {
    throw new SchemaVersionError(`The Coop schema '${participant.schema}' is at version ${version}; this `
      + `participant speaks the protocol of version ${SCHEMA_VERSION} (protocol.md: schema_version)`);
  }
}

/**
 * Whether an error of the participant's own statement may come from a migration under it: an undefined table,
 * column or function (SQLSTATE 42P01, 42703, 42883), or a dependent object it names gone (42704).
 */
function mayBeSchemaChange(e) {
  return ['42P01', '42703', '42883', '42704'].includes(e?.code);
}

module.exports = { SCHEMA_VERSION, SchemaVersionError, checkSchema, mayBeSchemaChange };
