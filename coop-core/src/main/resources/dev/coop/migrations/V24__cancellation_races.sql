-- Issue 34, items 8 and 9.
--
-- A run that commits and a cancellation of a scope it is in exclude each other. A cancellation decides REQUESTED
-- because something in its scope still runs, and a transaction that commits the last of it decided that nothing was
-- cancelled: under READ COMMITTED both could decide before either committed (REQUESTED, then COMMITTED). Operator
-- actions on a hierarchy hold the exclusive transaction-level advisory lock (x'636f6f70', hashtext(root)) from
-- before their checks to their commit (Operations, SelectionActions); a transaction that commits a run takes it
-- shared in the statement that commits it, and looks for a cancellation with a snapshot taken after it (a volatile
-- function's statements each get one). So the later of the two sees the other: the cancellation answers
-- ALREADY_FINISHED, or the commit gives up (CP001, raise) or leaves the parent runnable (false, its claim gives up).
-- The lock is only tried: while an operator action holds or awaits it, the commit fails with SQLSTATE 40001 and is
-- retried later as database trouble, so a committing transaction never waits for it while it holds row locks.
CREATE FUNCTION {schema}.commit_allowed(root uuid, scope uuid[], raise boolean) RETURNS boolean
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  f jsonb;
BEGIN
  IF NOT pg_try_advisory_xact_lock_shared(x'636f6f70'::int, hashtext(root::text)) THEN
    RAISE EXCEPTION USING ERRCODE = '40001',
          MESSAGE = 'an operator action on the hierarchy of message ' || root || ' is under way; try again';
  END IF;
  SELECT c.failure INTO f FROM {schema}.cancellation c WHERE c.scope_id = ANY(scope) LIMIT 1;
  IF f IS NOT NULL AND raise THEN
    RAISE EXCEPTION USING ERRCODE = 'CP001', MESSAGE = f::text;
  END IF;
  RETURN f IS NULL;
END $$;

-- Work a rollback starts runs to its end under the cancellation it answers. A run launched by a run on its rollback
-- path (an external task's compensation, a finally part's launch), and every run below it, is reached only by the
-- cancellations of the scopes from position cancel_from of its lineage on (its own and those inside it), never by
-- one of a scope above it. Null: from 1, every scope of its lineage. A launch in a run's scope writes
-- cardinality(lineage) of the new run when the launching run is on its rollback path, else the launching run's own.
ALTER TABLE {schema}.run ADD COLUMN cancel_from int;
