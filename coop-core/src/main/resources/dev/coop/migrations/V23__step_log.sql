-- A step's transaction writes one log row. The SUSPENDED event that records an executed step instance (a step, or a
-- child-failure handler run) now carries the instance itself: its sequence number among the run's instances
-- (step_seq, run.parent_seq of the runs it launched), its step index (instance: -1 - index for a handler run) and
-- which execution of that step it was (iteration). The table run_step, which recorded the same transition a second
-- time (one more heap row and index entry per step), goes. Every other event leaves the three columns null.
--
-- A run is named in the log by (message_id, saga): a message has at most one run per saga. The index event_message
-- becomes (message_id, saga, step_seq), so that a claim reads a run's newest instances (step_seq < steps_done, newest
-- first, LIMIT 8) and the one being rolled back (step_seq = rollback_seq) by index lookups however long the run
-- looped, and every read by message (SEEN, EMITTED, a message's log) still finds its rows by the prefix.
ALTER TABLE {schema}.event ADD COLUMN step_seq int, ADD COLUMN instance int, ADD COLUMN iteration int;

DROP INDEX {schema}.event_message;

-- Runs in flight, and finished ones that a parent or an operator may still roll back, keep every instance. The
-- happy-path SUSPENDED events of a run (those before its first ROLLING_BACK) are its instances in order, one each;
-- where they match the run's run_step rows one to one they are stamped with them. Runs whose log does not match (rows
-- written by hand) get one SUSPENDED event per instance instead, without a step name or an engine.
WITH steps AS (
  SELECT s.run_id, r.message_id, r.saga, count(*) AS n, max(s.seq) AS top
    FROM {schema}.run_step s JOIN {schema}.run r ON r.id = s.run_id
   GROUP BY s.run_id, r.message_id, r.saga
), rolled AS (
  SELECT message_id, saga, min(id) AS first FROM {schema}.event WHERE type = 'ROLLING_BACK' GROUP BY message_id, saga
), happy AS (
  SELECT e.id, steps.run_id, steps.n, steps.top,
         row_number() OVER (PARTITION BY steps.run_id ORDER BY e.id) - 1 AS seq,
         count(*) OVER (PARTITION BY steps.run_id) AS events
    FROM steps
    JOIN {schema}.event e ON e.message_id = steps.message_id AND e.saga = steps.saga AND e.type = 'SUSPENDED'
    LEFT JOIN rolled ON rolled.message_id = steps.message_id AND rolled.saga = steps.saga
   WHERE rolled.first IS NULL OR e.id < rolled.first
), stamped AS (
  UPDATE {schema}.event e SET step_seq = s.seq, instance = s.instance, iteration = s.iteration
    FROM happy h JOIN {schema}.run_step s ON s.run_id = h.run_id AND s.seq = h.seq
   WHERE e.id = h.id AND h.events = h.n AND h.top = h.n - 1
  RETURNING h.run_id
)
INSERT INTO {schema}.event (message_id, type, saga, lineage, step_seq, instance, iteration)
SELECT r.message_id, 'SUSPENDED', r.saga, r.lineage, s.seq, s.instance, s.iteration
  FROM {schema}.run_step s JOIN {schema}.run r ON r.id = s.run_id
 WHERE s.run_id NOT IN (SELECT run_id FROM stamped)
 ORDER BY r.id, s.seq;

DROP TABLE {schema}.run_step;

CREATE INDEX event_message ON {schema}.event (message_id, saga, step_seq);
