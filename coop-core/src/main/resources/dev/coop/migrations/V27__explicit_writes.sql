-- No PL/pgSQL trigger on run's hot path (issue 37, decision 2): the statements the engine, the client and other
-- participants send write what the triggers wrote, explicitly and only where it is needed.

-- Counts over time (version 22) without a per-launch or per-outcome upsert: a read derives launches from
-- run.created_at and final outcomes from run.finished_at, and adds what run_count holds (parkings, written with the
-- PARKED event on the failure path, and the minutes counted before this version). The minutes counted before this
-- version keep only their parkings: their runs' launches and outcomes are read from run now, and counting them in
-- both would count them twice.
DROP TRIGGER run_launched_count ON {schema}.run;
DROP TRIGGER run_outcome_count ON {schema}.run;
DROP FUNCTION {schema}.count_launched();
DROP FUNCTION {schema}.count_outcome();
DELETE FROM {schema}.run_count WHERE parked = 0;
UPDATE {schema}.run_count SET launched = 0, committed = 0, rolled_back = 0, rollback_failed = 0;
-- The outcomes of a window are a range of finished_at: the index retention found its finished roots in (version 6)
-- now holds every finished run, roots and children (the finishing update writes every index of run anyway: it moves
-- the row out of run_runnable's predicate, so it is never HOT). Retention reads it with parent_id IS NULL as a filter.
DROP INDEX {schema}.run_root_finished;
CREATE INDEX run_finished ON {schema}.run (finished_at) WHERE status IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED');

-- Wake-ups (versions 1, 9, 12, 17, 18): the statements that make runs runnable notify, and the engine decides which
-- runs need it (the quiet wake-ups of version 9: not the runs of the saga versions it wakes in-process, due now).
-- The transaction-local setting coop.local_sagas is no longer read or set.
DROP TRIGGER run_created_notify ON {schema}.run;
DROP TRIGGER run_woken_notify ON {schema}.run;
DROP FUNCTION {schema}.notify_new_run();
DROP FUNCTION {schema}.notify_woken_run();

-- Ordering keys (version 10) held and released by the statements of keyed runs only. A launch with keys first calls
-- lock_launch_keys (READ COMMITTED checked, the (saga, key) locks taken in one order), then decides HELD or RUNNABLE
-- in its insert, a statement that starts after the locks; a keyed run's final transaction calls
-- release_ordering_key_after. The runs already HELD stay HELD and are released as before.
DROP TRIGGER run_keyed_hold ON {schema}.run;
DROP TRIGGER run_keyed_release ON {schema}.run;
DROP FUNCTION {schema}.hold_keyed_run();
DROP FUNCTION {schema}.release_keyed_run();

-- Takes the ordering-key locks of a launch: one per saga registered for a topic and key given (pairs in one order, so
-- that launches of several keys cannot deadlock); refuses a transaction that is not READ COMMITTED (a snapshot
-- would miss a release). Returns how many locks it took.
CREATE FUNCTION {schema}.lock_launch_keys(topics text[], okeys text[]) RETURNS int LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  k record;
  n int := 0;
BEGIN
  FOR k IN SELECT DISTINCT reg.saga, u.okey
             FROM unnest(topics, okeys) AS u(topic, okey)
             JOIN {schema}.saga_registration reg ON reg.topic = u.topic
            WHERE u.okey IS NOT NULL
            ORDER BY 1, 2 LOOP
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      RAISE EXCEPTION USING ERRCODE = 'CP003',
        MESSAGE = 'A message with an ordering key must be launched in a READ COMMITTED transaction, not '
                  || current_setting('transaction_isolation') || ' (ordering key ' || quote_literal(k.okey)
                  || ', saga ' || k.saga || ')';
    END IF;
    PERFORM {schema}.ordering_key_lock(k.saga, k.okey);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;

-- Releases the next HELD run of (saga, key) after runs of the key finished in this transaction: the key's lock, then,
-- in statements that start after it, release_ordering_key's decision. `finished` names runs the calling statement
-- itself finishes (its own rows as it changes them may not be seen yet): they count as finished. Returns true.
CREATE FUNCTION {schema}.release_ordering_key_after(s text, k text, finished uuid[]) RETURNS boolean
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  released uuid;
  due timestamptz;
BEGIN
  PERFORM {schema}.ordering_key_lock(s, k);
  IF EXISTS (SELECT 1 FROM {schema}.run r WHERE r.saga = s AND r.ordering_key = k
                AND r.status IN ('RUNNABLE', 'WAITING', 'PARKED') AND r.id <> ALL (finished)) THEN
    RETURN true;
  END IF;
  UPDATE {schema}.run r SET status = 'RUNNABLE', version = r.version + 1
   WHERE r.id = (SELECT h.id FROM {schema}.run h WHERE h.saga = s AND h.ordering_key = k AND h.status = 'HELD'
                    AND h.id <> ALL (finished)
                  ORDER BY h.key_seq LIMIT 1)
  RETURNING r.id, r.runnable_at INTO released, due;
  IF released IS NOT NULL THEN
    PERFORM pg_notify('coop_{schema}',
                      CASE WHEN due <= clock_timestamp() THEN s
                           ELSE s || ' ' || ceil(extract(epoch FROM (due - clock_timestamp())) * 1000)::bigint END);
  END IF;
  RETURN true;
END $$;
DROP FUNCTION {schema}.release_ordering_key(text, text); -- replaced by release_ordering_key_after
