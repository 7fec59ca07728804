-- Saga limits: at most N runs of a saga execute a step at once, and at most N steps of a saga start per period,
-- across every engine sharing the schema. Both are part of the saga's definition, kept in its registration: the
-- engine that registers the saga last writes them, and every engine's claim reads them here.
ALTER TABLE {schema}.saga_registration
  ADD COLUMN concurrency    int,     -- slots: at most this many step transactions of the saga at once (null: no limit)
  ADD COLUMN rate_limit     int,     -- at most this many step starts ...
  ADD COLUMN rate_period_ms bigint;  -- ... in any window of this many milliseconds (both null: no limit)

-- The rate limit's window: one row per allowed start (rate_limit rows per saga), holding the time of one of the
-- saga's latest starts. A step may start at time t by moving the oldest row not locked by another starting step to
-- t, if it held a time at least a period before t; so any window of a period holds at most rate_limit starts.
CREATE TABLE {schema}.rate_token (
  saga     text        NOT NULL,
  slot     int         NOT NULL,
  taken_at timestamptz NOT NULL DEFAULT '-infinity',
  PRIMARY KEY (saga, slot)
);
CREATE INDEX rate_token_oldest ON {schema}.rate_token (saga, taken_at);

-- The advisory lock key of a saga's concurrency slot 0: slot s is this + s (one bigint key; pg_locks shows it as
-- classid = the high 32 bits, objid = s, objsubid = 1). Advisory locks are per database: the schema is in the hash.
CREATE FUNCTION {schema}.slot_key(saga text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT hashtext('{schema}.' || saga)::bigint << 32
$$;

-- What a step of a limited saga takes before it starts, in its claiming transaction (called once per claim, before
-- the run is looked up): a concurrency slot, the first of pg_try_advisory_xact_lock(slot_key(saga) + s) for
-- s in 0 .. concurrency-1 that it gets (released by the commit, the rollback, or a lost connection: it cannot leak),
-- then a rate token (the oldest rate_token row at least a period old, moved to now). Never waits for anything.
-- Returns the step's start (at_time, or the clock once the slot is taken) when both are granted, null otherwise; then it also sets the transaction-local
-- setting coop.limit_wait, read by the claiming engine before it commits: 'slot' (every slot busy), or the
-- milliseconds until the saga's oldest rate token is a period old.
CREATE FUNCTION {schema}.start_limited(limited_saga text, at_time timestamptz) RETURNS timestamptz
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  t timestamptz; -- the step's start: read after the slot is taken (a start never precedes its slot)
  slots int;
  period_ms bigint;
  free boolean;
BEGIN
  SELECT r.concurrency, r.rate_period_ms INTO slots, period_ms
    FROM {schema}.saga_registration r WHERE r.saga = limited_saga;
  free := slots IS NULL;
  FOR s IN 0 .. coalesce(slots, 0) - 1 LOOP
    IF pg_try_advisory_xact_lock({schema}.slot_key(limited_saga) + s) THEN
      free := true;
      EXIT;
    END IF;
  END LOOP;
  IF NOT free THEN
    PERFORM set_config('coop.limit_wait', 'slot', true);
    RETURN NULL;
  END IF;
  t := coalesce(at_time, clock_timestamp());
  IF period_ms IS NOT NULL THEN
    UPDATE {schema}.rate_token r SET taken_at = t
      FROM (SELECT x.slot FROM {schema}.rate_token x
             WHERE x.saga = limited_saga AND x.taken_at <= t - period_ms * interval '1 millisecond'
             ORDER BY x.taken_at LIMIT 1 FOR UPDATE SKIP LOCKED) o
     WHERE r.saga = limited_saga AND r.slot = o.slot;
    IF NOT FOUND THEN
      PERFORM set_config('coop.limit_wait', coalesce(
          (SELECT ceil(extract(epoch FROM (greatest(min(x.taken_at), t - period_ms * interval '1 millisecond')
                                           + period_ms * interval '1 millisecond' - t)) * 1000)::bigint::text
             FROM {schema}.rate_token x WHERE x.saga = limited_saga), '0'), true);
      RETURN NULL;
    END IF;
  END IF;
  RETURN t;
END $$;
