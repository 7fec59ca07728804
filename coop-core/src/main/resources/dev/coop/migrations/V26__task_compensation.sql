-- Issue 34, item 9: a task reads COMPENSATED only when its compensation committed. The rollback that launches a
-- completed task's compensation records the message it launched; the task reads COMPENSATING until the rollback,
-- once every run of that message finished, settles it COMPENSATED (every run committed) or COMPENSATION_FAILED (one
-- did not: the rollback then ends ROLLBACK_FAILED). Null: nothing launched (none declared, or a task of version 25 or before).
ALTER TABLE {schema}.external_task ADD COLUMN compensation_message_id uuid;
