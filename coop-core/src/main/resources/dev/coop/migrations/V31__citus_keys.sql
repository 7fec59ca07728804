-- Launch keys on a distributed PostgreSQL (issue 35). Both tables are written on Citus only, where CitusLayout keeps
-- them local to the coordinator (they are not distributed: a key is unique across every hierarchy, and its rows name
-- the hierarchy they belong to by root, so that what they lead to is routed). On plain PostgreSQL the unique index
-- message_idempotency and the run's own ordering-key columns (versions 10 and 27) stay what Coop uses; these tables
-- stay empty there, and no statement of plain PostgreSQL changes.

-- Idempotency keys: one row per (topic, key) held, inserted in the launch's transaction before its message (ON
-- CONFLICT DO NOTHING, which waits for a launch of the same key in flight), deleted with the hierarchy (retention).
CREATE TABLE {schema}.launch_key (
  topic           text NOT NULL,
  idempotency_key text NOT NULL,
  message_id      uuid NOT NULL,
  root_id         uuid NOT NULL,
  PRIMARY KEY (topic, idempotency_key)
);
CREATE INDEX launch_key_root ON {schema}.launch_key (root_id);

-- Ordering keys: the turns of a (saga, key), one row per unfinished keyed run that takes a turn (a run launched below
-- a run of its saga and key runs within that run's turn and has none). The row with the lowest key_seq holds the key;
-- the others wait, their runs HELD. The release (release_ordering_key_after, Citus's form) drops the rows of runs that
-- finished from the head of the queue and makes the next head's run RUNNABLE, by its root and id.
CREATE TABLE {schema}.key_turn (
  saga         text NOT NULL,
  ordering_key text NOT NULL,
  key_seq      bigint NOT NULL,
  root_id      uuid NOT NULL,
  run_id       uuid NOT NULL,
  PRIMARY KEY (saga, ordering_key, key_seq)
);
