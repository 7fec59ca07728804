-- Attempt history: a step's failed attempts, a run's parking and an operator's answer to it are events of the log
-- (types ATTEMPT_FAILED, PARKED, RETRIED, MARKED_DONE; event.type has had no CHECK since version 13). 'attempt' says
-- which attempt of its step an ATTEMPT_FAILED or PARKED event is about (null for every other event: no rewrite of the
-- table, no cost for the events of the happy path). A step retried many times keeps its first attempts' events, and
-- one more event for the latest attempt, rewritten by each later one: the attempts between are counted, not kept.
ALTER TABLE {schema}.event ADD COLUMN attempt int;

-- The name of each saga version's first step, written by engines when they register it: a run's row names the step it
-- runs next only from its second step on (run.next_step is set by the advance), so inspection reads the first step's
-- name here to show a run's first step while it runs.
ALTER TABLE {schema}.saga_version ADD COLUMN first_step text;
