-- A finally part may launch messages (issue 14). When it does during a rollback that has no instance left to undo,
-- the run waits for those runs at the rollback stage FINISH, then ends ROLLED_BACK (or ROLLBACK_FAILED).
ALTER TABLE {schema}.run DROP CONSTRAINT run_rollback_stage_check;
ALTER TABLE {schema}.run ADD CONSTRAINT run_rollback_stage_check
  CHECK (rollback_stage IN ('START', 'CHILDREN', 'COMPENSATE', 'FINISH'));
