-- A run that its worker continues at once is reserved for it between the commit of one step and the reclaim of the
-- next (sent in the same round trip): an engine's claim by saga skips a run reserved until a time still to come.
-- Without it every other worker's claim, which takes the earliest runnable run first, found the continuing run
-- (whose runnable_at is kept so that its update stays HOT) whenever it looked in that gap, took it, and the
-- continuing worker's reclaim found nothing. Wall-clock time (clock_timestamp()), whatever time source the engine
-- uses: a reservation whose worker died lapses after a moment (250 ms), and the run is claimed as usual. Not indexed:
-- the claim reads it from the row it found, so the continuing update stays HOT. Nullable, no default: adding it
-- rewrites nothing.
ALTER TABLE {schema}.run ADD COLUMN reserved_until timestamptz;
