-- Schema diet (issue 16): the hot tables lose what costs every step and protects against nothing the engine can do.
-- Only the engine writes run and event (and it writes a message, its runs and its events in one statement), so:
-- * the text CHECK constraints on event.type and on run (status, phase, rollback_stage, resolution) go: PostgreSQL
--   rebuilds each CHECK expression from its stored text for every statement that writes the table (about 6 % of
--   the server's CPU per step). The allowed values are listed in docs/protocol.md; the engine writes only those.
-- * the foreign keys from event and run to message go: each took a key-share row lock on the message (dirtying its
--   page and writing WAL) for every event and run written.
-- IF EXISTS: the constraints carry PostgreSQL's default names; a schema created by hand without them migrates too.
ALTER TABLE {schema}.event DROP CONSTRAINT IF EXISTS event_type_check;
ALTER TABLE {schema}.event DROP CONSTRAINT IF EXISTS event_message_id_fkey;
ALTER TABLE {schema}.run DROP CONSTRAINT IF EXISTS run_status_check;
ALTER TABLE {schema}.run DROP CONSTRAINT IF EXISTS run_phase_check;
ALTER TABLE {schema}.run DROP CONSTRAINT IF EXISTS run_rollback_stage_check;
ALTER TABLE {schema}.run DROP CONSTRAINT IF EXISTS run_resolution_check;
ALTER TABLE {schema}.run DROP CONSTRAINT IF EXISTS run_message_id_fkey;
