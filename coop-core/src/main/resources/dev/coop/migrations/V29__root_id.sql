-- Issue 37, decision 5: the hot tables carry the hierarchy's root.
--
-- root_id is the first element of lineage: the root message's id, which names the cooperation tree a row belongs to.
-- It is a column (not the expression lineage[1]) so that every statement that addresses one hierarchy's rows can name
-- it, an index can be a plain column index, and a distributed PostgreSQL can use it as the distribution column
-- (docs/scaling.md). Every writer sets it: the engine, the client, operators, joins, external tasks, schedules and
-- other-language participants (docs/protocol.md). A message's root is the hierarchy it was launched in (a launch on
-- the global scope is its own root); a cancellation's is its scope's.
ALTER TABLE {schema}.run ADD COLUMN root_id uuid;
ALTER TABLE {schema}.event ADD COLUMN root_id uuid;
ALTER TABLE {schema}.message ADD COLUMN root_id uuid;
ALTER TABLE {schema}.cancellation ADD COLUMN root_id uuid;

-- Backfill: in-flight hierarchies (mid-saga, mid-rollback, waiting on children) keep their rows; only the new column
-- is written. A message's root comes from its EMITTED event (every launch writes one), else from a run of it, else it
-- is its own root.
UPDATE {schema}.run SET root_id = lineage[1];
UPDATE {schema}.event SET root_id = lineage[1];
UPDATE {schema}.cancellation SET root_id = lineage[1];
UPDATE {schema}.message m
   SET root_id = coalesce((SELECT e.lineage[1] FROM {schema}.event e
                            WHERE e.message_id = m.id AND e.type = 'EMITTED' LIMIT 1),
                          (SELECT r.lineage[1] FROM {schema}.run r WHERE r.message_id = m.id LIMIT 1),
                          m.id);

ALTER TABLE {schema}.run ALTER COLUMN root_id SET NOT NULL;
ALTER TABLE {schema}.event ALTER COLUMN root_id SET NOT NULL;
ALTER TABLE {schema}.message ALTER COLUMN root_id SET NOT NULL;
ALTER TABLE {schema}.cancellation ALTER COLUMN root_id SET NOT NULL;

-- The expression indexes on lineage[1] become indexes on the column; their readers (inspection, retention,
-- operations) name root_id.
DROP INDEX {schema}.run_active_root;
CREATE INDEX run_active_root ON {schema}.run (root_id) WHERE status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD');
DROP INDEX {schema}.event_root;
CREATE INDEX event_root ON {schema}.event (root_id);
