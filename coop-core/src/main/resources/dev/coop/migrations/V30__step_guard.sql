-- Issue 37, decision 5: no volatile function inside an UPDATE of a hot table.
--
-- An advance checks three things before it moves its run: that its transaction is still the one that claimed the run
-- (claim_lost, version 4), that the run's scope was not cancelled (assert_not_cancelled), and, when it commits the run
-- or leaves it waiting, that under the hierarchy's operator lock (commit_allowed, version 24). These checks were
-- conditions of the run's UPDATE; they are now a guard, a CTE of the same statement that the UPDATE reads as one value
-- (AdvanceSql.GUARD), with every input bound (the claim's transaction, the root, the scope). The functions are the
-- same; what changes is where they run: a SELECT without tables, which a distributed PostgreSQL evaluates on the node
-- the session is connected to, before it routes the UPDATE to the hierarchy's shard.
--
-- The checks read cancellations by the hierarchy's root as well as by scope, so that on Citus the read is routed to
-- one shard (a cancellation's root_id is its scope's root, version 29).
CREATE OR REPLACE FUNCTION {schema}.commit_allowed(root uuid, scope uuid[], raise boolean) RETURNS boolean
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  f jsonb;
BEGIN
  IF NOT pg_try_advisory_xact_lock_shared(x'636f6f70'::int, hashtext(root::text)) THEN
    RAISE EXCEPTION USING ERRCODE = '40001',
          MESSAGE = 'an operator action on the hierarchy of message ' || root || ' is under way; try again';
  END IF;
  SELECT c.failure INTO f FROM {schema}.cancellation c WHERE c.root_id = root AND c.scope_id = ANY(scope) LIMIT 1;
  IF f IS NOT NULL AND raise THEN
    RAISE EXCEPTION USING ERRCODE = 'CP001', MESSAGE = f::text;
  END IF;
  RETURN f IS NULL;
END $$;

CREATE FUNCTION {schema}.assert_not_cancelled(root uuid, scope uuid[]) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
DECLARE
  f jsonb;
BEGIN
  SELECT c.failure INTO f FROM {schema}.cancellation c WHERE c.root_id = root AND c.scope_id = ANY(scope) LIMIT 1;
  IF f IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'CP001', MESSAGE = f::text;
  END IF;
  RETURN true;
END $$;
