-- Retention: finished hierarchies older than a configured age are deleted root by root. Candidates are found through
-- the root runs that finished, oldest first; the index holds only finished root runs, so it is written once per
-- hierarchy (when its root run finishes) and never on the path of a continuing step.
CREATE INDEX run_root_finished ON {schema}.run (finished_at)
  WHERE parent_id IS NULL AND status IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED');
