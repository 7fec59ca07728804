-- Step instances without rows while a run is linear (issue 16). Most runs execute their steps once each, in order:
-- instance n is step n, at its first iteration. Such a run's instances are implicit: run.linear_steps counts the
-- leading instances that are their own sequence number, and run_step holds rows only from there on (the first
-- instance that differs, a loop, a jump, a child-failure handler, and every instance after it). A reader of
-- instance seq takes (seq, 1) when seq < linear_steps, the row otherwise. Runs in flight keep their rows: 0 means
-- every instance has one. A writer that does not know the column (an older participant) writes every row and leaves
-- it alone, which stays consistent.
ALTER TABLE {schema}.run ADD COLUMN linear_steps int NOT NULL DEFAULT 0;
