-- Saga limits made cheap when they do not bind. A step start moves one rate token of its saga to its start time;
-- any token free for a period will do (each token's successive times are then a period apart, so no window of a
-- period holds more starts than the saga has tokens), so the claim no longer looks for the oldest: it scans the
-- saga's tokens in primary-key order from a random one on, wrapping around, and takes the first that is free. With no
-- index on taken_at, moving a token is a HOT update (no index entry written), given room on its page.
DROP INDEX {schema}.rate_token_oldest;
ALTER TABLE {schema}.rate_token SET (fillfactor = 50);
-- rewrites the existing rows with that room (a few rows per limited saga)
CLUSTER {schema}.rate_token USING rate_token_pkey;

-- What a step of a limited saga takes before it starts, for participants that claim through a function call (the
-- Java engine runs the same in plain SQL within its claim, binding the limits it read from saga_registration): a
-- concurrency slot, the first of pg_try_advisory_xact_lock(slot_key(saga) + s) that it gets, for s from a random
-- slot on, wrapping around (released by the commit, the rollback, or a lost connection: it cannot leak), then a rate
-- token (a rate_token row of the saga at least a period old, from a random one on in primary-key order, wrapping
-- around, moved to the start). Never waits for anything. Returns the step's start (at_time, or the clock once the
-- slot is taken) when both are granted, null otherwise; then it also sets the transaction-local setting
-- coop.limit_wait, read by the claiming engine before it commits: 'slot' (every slot busy), or the milliseconds until
-- the saga's oldest rate token is a period old.
CREATE OR REPLACE FUNCTION {schema}.start_limited(limited_saga text, at_time timestamptz) RETURNS timestamptz
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  t timestamptz; -- the step's start: read after the slot is taken (a start never precedes its slot)
  slots int;
  tokens int;
  period_ms bigint;
  first int;
  free boolean;
  token int;
BEGIN
  SELECT r.concurrency, r.rate_limit, r.rate_period_ms INTO slots, tokens, period_ms
    FROM {schema}.saga_registration r WHERE r.saga = limited_saga;
  free := slots IS NULL;
  first := floor(random() * coalesce(slots, 1))::int;
  FOR s IN 0 .. coalesce(slots, 0) - 1 LOOP
    IF pg_try_advisory_xact_lock({schema}.slot_key(limited_saga) + (s + first) % slots) THEN
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
    first := floor(random() * coalesce(tokens, 1))::int;
    SELECT c.slot INTO token FROM (
        SELECT * FROM (SELECT x.slot FROM {schema}.rate_token x
                        WHERE x.saga = limited_saga AND x.slot >= first
                          AND x.taken_at <= t - period_ms * interval '1 millisecond'
                        ORDER BY x.slot LIMIT 1 FOR UPDATE SKIP LOCKED) a
        UNION ALL
        SELECT * FROM (SELECT x.slot FROM {schema}.rate_token x
                        WHERE x.saga = limited_saga AND x.slot < first
                          AND x.taken_at <= t - period_ms * interval '1 millisecond'
                        ORDER BY x.slot LIMIT 1 FOR UPDATE SKIP LOCKED) b
        LIMIT 1) c;
    IF token IS NULL THEN
      PERFORM set_config('coop.limit_wait', coalesce(
          (SELECT ceil(extract(epoch FROM (greatest(min(x.taken_at), t - period_ms * interval '1 millisecond')
                                           + period_ms * interval '1 millisecond' - t)) * 1000)::bigint::text
             FROM {schema}.rate_token x WHERE x.saga = limited_saga), '0'), true);
      RETURN NULL;
    END IF;
    UPDATE {schema}.rate_token r SET taken_at = t WHERE r.saga = limited_saga AND r.slot = token;
  END IF;
  RETURN t;
END $$;
