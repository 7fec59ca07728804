-- Launch options: idempotent launches, priorities, and runs serialised by an ordering key.

-- Idempotency: at most one message per (topic, key) while that message exists. A launch that meets an existing key
-- (ON CONFLICT DO NOTHING, which waits for a launch of the same key in flight) writes nothing and answers the
-- existing message's id. Retention deletes the message and with it the key.
ALTER TABLE {schema}.message ADD COLUMN idempotency_key text;
CREATE UNIQUE INDEX message_idempotency ON {schema}.message (topic, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

-- Priority: among the runnable runs of a saga the highest priority is claimed first, the earliest due first within
-- one priority. The claim lists every priority (-10..10) in the index condition, so PostgreSQL walks the index once
-- per priority present and stops at the first due run: still an index probe, whatever waits later.
ALTER TABLE {schema}.run ADD COLUMN priority smallint NOT NULL DEFAULT 0;
DROP INDEX {schema}.run_runnable;
CREATE INDEX run_runnable ON {schema}.run (saga, priority DESC, runnable_at) WHERE status = 'RUNNABLE';

-- Ordering keys: the runs of one saga whose messages carry the same key run one at a time, in launch order. A run
-- launched while its key has an unfinished run of the same saga is created HELD (the claim never sees it); the
-- transaction that finishes a run of the key releases the oldest HELD one (key_seq order) when no other run of the
-- key is active. Launch and release take the same transaction-level advisory lock on (saga, key) and decide in a
-- statement that starts after it, so neither misses the other.
ALTER TABLE {schema}.run DROP CONSTRAINT IF EXISTS run_status_check; -- 'HELD' is a status now
ALTER TABLE {schema}.run ADD COLUMN ordering_key text;
ALTER TABLE {schema}.run ADD COLUMN key_seq bigint;
CREATE SEQUENCE {schema}.run_key_seq;
CREATE INDEX run_key_active ON {schema}.run (saga, ordering_key)
  WHERE ordering_key IS NOT NULL AND status IN ('RUNNABLE', 'WAITING', 'PARKED');
CREATE INDEX run_key_held ON {schema}.run (saga, ordering_key, key_seq) WHERE status = 'HELD';
-- A HELD run is unfinished: its hierarchy is active (retention, operators).
DROP INDEX {schema}.run_active_root;
CREATE INDEX run_active_root ON {schema}.run ((lineage[1])) WHERE status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD');

CREATE FUNCTION {schema}.ordering_key_lock(saga text, ordering_key text) RETURNS void LANGUAGE sql VOLATILE AS $$
  SELECT pg_advisory_xact_lock(x'636f6f71'::int, hashtext(saga || '/' || ordering_key))
$$;

-- Releases the oldest HELD run of (saga, key) unless a run of the key is active; notifies the engines, because the
-- committing engine did not cause this wake-up itself (coop.local_sagas does not apply). Returns the released run.
CREATE FUNCTION {schema}.release_ordering_key(s text, k text) RETURNS uuid LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  released uuid;
  due timestamptz;
BEGIN
  IF EXISTS (SELECT 1 FROM {schema}.run r WHERE r.saga = s AND r.ordering_key = k
                AND r.status IN ('RUNNABLE', 'WAITING', 'PARKED')) THEN
    RETURN NULL;
  END IF;
  UPDATE {schema}.run r SET status = 'RUNNABLE', version = r.version + 1
   WHERE r.id = (SELECT h.id FROM {schema}.run h WHERE h.saga = s AND h.ordering_key = k AND h.status = 'HELD'
                  ORDER BY h.key_seq LIMIT 1)
  RETURNING r.id, r.runnable_at INTO released, due;
  IF released IS NOT NULL THEN
    PERFORM pg_notify('coop_{schema}',
                      CASE WHEN due <= clock_timestamp() THEN s
                           ELSE s || ' ' || ceil(extract(epoch FROM (due - clock_timestamp())) * 1000)::bigint END);
  END IF;
  RETURN released;
END $$;

-- A run with an ordering key is created HELD when its key has an unfinished run of the same saga, unless one of its
-- ancestors is a run of that saga and key (held behind its own ancestor, which waits for it, it would never run). If
-- the key has only HELD runs (nothing active: rows changed by hand), the oldest of them is released here, so no key
-- stays stuck.
CREATE FUNCTION {schema}.hold_keyed_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN -- a snapshot would miss a release
    RAISE EXCEPTION USING ERRCODE = 'CP003',
      MESSAGE = 'A message with an ordering key must be launched in a READ COMMITTED transaction, not '
                || current_setting('transaction_isolation') || ' (ordering key ' || quote_literal(NEW.ordering_key)
                || ', saga ' || NEW.saga || ')';
  END IF;
  PERFORM {schema}.ordering_key_lock(NEW.saga, NEW.ordering_key);
  NEW.key_seq := nextval('{schema}.run_key_seq');
  IF EXISTS (SELECT 1 FROM {schema}.run a WHERE a.id = ANY(NEW.lineage) AND a.saga = NEW.saga
                AND a.ordering_key = NEW.ordering_key) THEN
    RETURN NEW; -- launched below a run of its saga and key, which waits for it: it runs within that run's turn
  END IF;
  IF NEW.status = 'RUNNABLE' AND EXISTS (SELECT 1 FROM {schema}.run r WHERE r.saga = NEW.saga
                                            AND r.ordering_key = NEW.ordering_key
                                            AND r.status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD')) THEN
    NEW.status := 'HELD';
    PERFORM {schema}.release_ordering_key(NEW.saga, NEW.ordering_key);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER run_keyed_hold BEFORE INSERT ON {schema}.run
  FOR EACH ROW WHEN (NEW.ordering_key IS NOT NULL) EXECUTE FUNCTION {schema}.hold_keyed_run();

-- Whatever finishes a run (its advance, a parent committed by its last child, a parent settling unstarted children,
-- a cancellation, an operator), the next HELD run of its key is released in the same transaction.
CREATE FUNCTION {schema}.release_keyed_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM {schema}.ordering_key_lock(NEW.saga, NEW.ordering_key);
  PERFORM {schema}.release_ordering_key(NEW.saga, NEW.ordering_key);
  RETURN NULL;
END $$;
CREATE TRIGGER run_keyed_release AFTER UPDATE OF status ON {schema}.run
  FOR EACH ROW WHEN (OLD.ordering_key IS NOT NULL
                     AND NEW.status IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED')
                     AND OLD.status NOT IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED'))
  EXECUTE FUNCTION {schema}.release_keyed_run();
