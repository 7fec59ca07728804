-- Fewer indexes on run (issue 37, decision 3). Every INSERT and UPDATE of a run opens, and locks, every index of the
-- table, whether or not the row is in it: each index is one of the 16 fast-path lock slots a backend has (PostgreSQL
-- 15-17), and a step's transaction that needs more takes the rest in the shared lock table. The two partial indexes
-- of ordering keys, whose readers can share one index, become one; what it indexes, and every reader's index
-- condition, stay the same. (The parked runs and the finished runs keep an index each: run_finished, version 27,
-- serves the counts over time, over every finished run, not only the roots.)

-- Ordering keys: the active run of a key (its launch's hold, its release) and the oldest HELD run of a key (the
-- release) in one index. status is a key column so that both read only their statuses in the index condition; it is
-- already in run_runnable's predicate, so updates that change it were never HOT anyway.
DROP INDEX {schema}.run_key_active;
DROP INDEX {schema}.run_key_held;
CREATE INDEX run_key ON {schema}.run (saga, ordering_key, status, key_seq)
  WHERE ordering_key IS NOT NULL AND status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD');
