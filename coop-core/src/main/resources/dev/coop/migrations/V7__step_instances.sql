-- A run's executed step instances move out of the run row. The row's 'history' array grew by one element per
-- instance, so a looping step (Flow.repeat()) made every claim read, and every advance rewrite, the whole list
-- (O(n) per step, O(n^2) per run). Now each instance is one row of run_step, written once by the advance and read
-- back only by key: the claim reads the newest few (which runs the next step's results come from) and, on the
-- rollback path, the one being rolled back. The run row keeps 'iterations': how many times each step ran, one
-- element per step of the saga, so its size does not grow with a loop.
CREATE TABLE {schema}.run_step (
  run_id    uuid NOT NULL,
  seq       int  NOT NULL,  -- the instance's sequence number (0 for the run's first; run.parent_seq of its children)
  instance  int  NOT NULL,  -- the step index, or -1 - index for a child-failure handler run
  iteration int  NOT NULL,  -- which execution of that step it was (or handled), from 1
  PRIMARY KEY (run_id, seq)
);

ALTER TABLE {schema}.run ADD COLUMN iterations int[] NOT NULL DEFAULT '{}';

INSERT INTO {schema}.run_step (run_id, seq, instance, iteration)
SELECT h.id, h.n - 1, h.instance,
       greatest(1, count(*) FILTER (WHERE h.instance >= 0)
                   OVER (PARTITION BY h.id, abs(h.instance + CASE WHEN h.instance < 0 THEN 1 ELSE 0 END) ORDER BY h.n))
  FROM (SELECT r.id, x.instance, x.n FROM {schema}.run r, unnest(r.history) WITH ORDINALITY AS x(instance, n)) h;

UPDATE {schema}.run r
   SET iterations = (SELECT array_agg(coalesce(
                              (SELECT count(*)::int FROM unnest(r.history) x WHERE x = i), 0) ORDER BY i)
                       FROM generate_series(0, (SELECT max(x) FROM unnest(r.history) x)) i)
 WHERE cardinality(r.history) > 0;

ALTER TABLE {schema}.run DROP COLUMN history;
