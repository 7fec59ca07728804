-- Issue 37, decision 5 (docs/scaling.md, "the hierarchy's operator lock as a row lock").
--
-- A transaction that commits a run (or leaves one waiting on the happy path) and an operator action on its hierarchy
-- exclude each other (version 24). They used to meet on the advisory lock (x'636f6f70', hashtext(root)), tried shared
-- by commit_allowed; they now meet on the root message's row, which a distributed PostgreSQL can lock on the
-- hierarchy's own shard (an advisory lock lives in one node's lock table). commit_allowed takes the row FOR KEY SHARE:
-- key-share locks do not conflict with each other (steps of one hierarchy do not serialise) nor with updates of the
-- row's other columns (nothing locks a message otherwise: version 13 dropped the foreign keys to it). Operator actions
-- (Operations, SelectionBatches) take it FOR UPDATE after the advisory lock, which they still take exclusively: for
-- external task settlements (TaskSql, a participant's tasks.js), which take that one shared, and for a root whose
-- message row is gone (pruned), where commit_allowed falls back to trying it as before. The row is only tried (SKIP
-- LOCKED): while an operator action holds it, the commit fails with SQLSTATE 40001 and is retried later as database
-- trouble, so a committing transaction never waits for it while it holds row locks. The cancellation is then read by
-- a statement of its own, whose snapshot postdates the lock (a volatile function's statements each take one).
-- Same signature and result: callers (the engine's guard statements, a participant's advance) are unchanged.
CREATE OR REPLACE FUNCTION {schema}.commit_allowed(root uuid, scope uuid[], raise boolean) RETURNS boolean
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  f jsonb;
  locked uuid;
BEGIN
  SELECT m.id INTO locked FROM {schema}.message m WHERE m.root_id = root AND m.id = root FOR KEY SHARE SKIP LOCKED;
  IF locked IS NULL THEN
    IF EXISTS (SELECT 1 FROM {schema}.message m WHERE m.root_id = root AND m.id = root)
       OR NOT pg_try_advisory_xact_lock_shared(x'636f6f70'::int, hashtext(root::text)) THEN
      RAISE EXCEPTION USING ERRCODE = '40001',
            MESSAGE = 'an operator action on the hierarchy of message ' || root || ' is under way; try again';
    END IF;
  END IF;
  SELECT c.failure INTO f FROM {schema}.cancellation c WHERE c.root_id = root AND c.scope_id = ANY(scope) LIMIT 1;
  IF f IS NOT NULL AND raise THEN
    RAISE EXCEPTION USING ERRCODE = 'CP001', MESSAGE = f::text;
  END IF;
  RETURN f IS NULL;
END $$;
