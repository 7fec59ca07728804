-- The last transaction of a run with no parent to count off commits in the round trip of its advance (issue 16).
-- It used to look its message's pending join memberships up (join_pending_members, version 2), wait for the answer,
-- settle what it found, and send COMMIT in a round trip of its own; almost always nothing was found. Now the engine
-- sends the advance, a savepoint, this check and COMMIT together: the check takes the same shared advisory locks and
-- looks with a snapshot taken after them, and raises CP004 when a membership is pending, so that the COMMIT does not
-- run. The engine then rolls back to the savepoint (the advance stands), looks the memberships up, settles them and
-- commits, as before.
CREATE FUNCTION {schema}.assert_no_pending_members(messages uuid[]) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared({schema}.join_lock_key(x)) FROM unnest(messages) AS x;
  IF EXISTS (SELECT 1 FROM {schema}.join_member m WHERE m.message_id = ANY(messages) AND m.state = 'PENDING') THEN
    RAISE EXCEPTION USING ERRCODE = 'CP004', MESSAGE = 'a join membership of these messages is pending';
  END IF;
  RETURN true;
END $$;
