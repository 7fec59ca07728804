-- Counts over time: per saga and minute of the database's clock, how many runs were launched, committed, rolled back,
-- failed to roll back and were parked. A rollup kept by two triggers on run, so that reading the last hours is a range
-- scan of a few rows per saga and minute, never a scan of the log. Only launches and final outcomes write here: a step
-- that neither launches nor changes its run's status (the quiet advance leaves status out of its SET) fires neither.
--
-- Each row is one shard of a saga's minute: the shard is the writing backend's pid, so that two transactions never
-- update the same row (a row's lock is held until the counting transaction commits: connections sharing a row would
-- queue on it, and transactions counting several sagas in different orders could deadlock) and readers add the
-- shards up. Runs of internal sagas ('~external-task') are not
-- counted. Retention deletes the minutes older than its cutoff.
CREATE TABLE {schema}.run_count (
  minute          timestamptz NOT NULL,
  saga            text        NOT NULL,
  shard           int         NOT NULL,
  launched        int         NOT NULL DEFAULT 0,
  committed       int         NOT NULL DEFAULT 0,
  rolled_back     int         NOT NULL DEFAULT 0,
  rollback_failed int         NOT NULL DEFAULT 0,
  parked          int         NOT NULL DEFAULT 0,
  PRIMARY KEY (minute, saga, shard)
);

-- Launches: one upsert per inserting statement and saga (a fan-out of 1,000 children is one row's update).
CREATE FUNCTION {schema}.count_launched() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {schema}.run_count AS c (minute, saga, shard, launched)
  SELECT date_trunc('minute', clock_timestamp()), saga, pg_backend_pid(), count(*)
    FROM launched_runs WHERE left(saga, 1) <> '~' GROUP BY saga
  ON CONFLICT (minute, saga, shard) DO UPDATE SET launched = c.launched + EXCLUDED.launched;
  RETURN NULL;
END $$;
CREATE TRIGGER run_launched_count AFTER INSERT ON {schema}.run
  REFERENCING NEW TABLE AS launched_runs FOR EACH STATEMENT EXECUTE FUNCTION {schema}.count_launched();

-- Final outcomes (and parking): one upsert per run that reaches one.
CREATE FUNCTION {schema}.count_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF left(NEW.saga, 1) <> '~' THEN
    INSERT INTO {schema}.run_count AS c (minute, saga, shard, committed, rolled_back, rollback_failed, parked)
    VALUES (date_trunc('minute', clock_timestamp()), NEW.saga, pg_backend_pid(),
            (NEW.status = 'COMMITTED')::int, (NEW.status = 'ROLLED_BACK')::int,
            (NEW.status = 'ROLLBACK_FAILED')::int, (NEW.status = 'PARKED')::int)
    ON CONFLICT (minute, saga, shard) DO UPDATE
       SET committed = c.committed + EXCLUDED.committed, rolled_back = c.rolled_back + EXCLUDED.rolled_back,
           rollback_failed = c.rollback_failed + EXCLUDED.rollback_failed, parked = c.parked + EXCLUDED.parked;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER run_outcome_count AFTER UPDATE OF status ON {schema}.run
  FOR EACH ROW WHEN (NEW.status <> OLD.status
                     AND NEW.status IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED', 'PARKED'))
  EXECUTE FUNCTION {schema}.count_outcome();
