-- Fewer indexes on run (issue 37, decision 3). Every INSERT and UPDATE of a run opens, and locks, every index of the
-- table, whether or not the row is in it: each index is one of the 16 fast-path lock slots a backend has (PostgreSQL
-- 15-17), and a step's transaction that needs more takes the rest in the shared lock table. Two pairs of partial
-- indexes whose readers can share one index become one index each; what they index, and every reader's index
-- condition, stay the same.

-- Ordering keys: the active run of a key (its launch's hold, its release) and the oldest HELD run of a key (the
-- release) in one index. status is a key column so that both read only their statuses in the index condition; it is
-- already in run_runnable's predicate, so updates that change it were never HOT anyway.
DROP INDEX {schema}.run_key_active;
DROP INDEX {schema}.run_key_held;
CREATE INDEX run_key ON {schema}.run (saga, ordering_key, status, key_seq)
  WHERE ordering_key IS NOT NULL AND status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD');

-- Runs that wait for nobody but an operator or retention: the parked runs (listed oldest first: finished_at null,
-- then created_at) and the finished root runs (retention's candidates, oldest finished first). A parked run is
-- unfinished: its finished_at is null (a run is parked only from RUNNABLE, or by an advance that did not finish it).
DROP INDEX {schema}.run_parked;
DROP INDEX {schema}.run_root_finished;
CREATE INDEX run_settled ON {schema}.run (finished_at NULLS FIRST, created_at)
  WHERE status = 'PARKED' OR (parent_id IS NULL AND status IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED'));
