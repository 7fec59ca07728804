-- A run's SEEN is written once. The claim of a run whose first step has not committed writes SEEN unless the log has
-- one already: a step that ran COMMIT on its own connection made its claim's SEEN durable (and let go of the run's
-- lock), and the next claim must not write a second one. That claim's test used to read the log with the claim
-- statement's snapshot, which can predate that COMMIT even though the lock was taken after it: a second SEEN. This
-- function reads the log with a snapshot of its own (a VOLATILE function's statements take a new one), taken after
-- the claim locked the run, so it sees every SEEN committed before that lock.
CREATE FUNCTION {schema}.seen_missing(seen_message uuid, seen_saga text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN NOT EXISTS (SELECT 1 FROM {schema}.event e
                      WHERE e.message_id = seen_message AND e.saga = seen_saga AND e.type = 'SEEN');
END $$;
