-- The names of each saga version's steps whose rollback runs code of theirs (a compensation, or a finally part),
-- written by engines when they register the version. The log writes a 'Rollback of <step>' transaction for every
-- executed instance, also of a step that declares no compensation (as the reference tables have it), so inspection
-- reads this to leave those rows out of trees. Null: not known (a version registered before version 25).
ALTER TABLE {schema}.saga_version ADD COLUMN compensating_steps text[];
