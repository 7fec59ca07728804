-- Coop schema, version 2: joins, a fan-in for code outside sagas. A join waits for an expected number of member
-- messages to finish, then publishes exactly one message (on-complete or on-fail). See docs/protocol.md, "Joins".

CREATE TABLE {schema}.join_group (
  id                 uuid        PRIMARY KEY,
  grouping_key       text        CHECK (length(grouping_key) BETWEEN 1 AND 255),
  expected           int         NOT NULL CHECK (expected >= 1),
  attached           int         NOT NULL DEFAULT 0,   -- members attached so far (at most expected)
  completed          int         NOT NULL DEFAULT 0,   -- members settled COMPLETED
  failed             int         NOT NULL DEFAULT 0,   -- members settled FAILED
  fail_if_any_failed boolean     NOT NULL,
  metadata           jsonb,
  on_complete_topic  text        NOT NULL,
  on_fail_topic      text        NOT NULL,
  status             text        NOT NULL DEFAULT 'OPEN'
                                 CHECK (status IN ('OPEN', 'COMPLETED', 'FAILED', 'TIMED_OUT')),
  timeout_at         timestamptz,                      -- database clock; null: no timeout
  outcome_message_id uuid,                             -- the message published when the join left OPEN
  created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at        timestamptz,
  CHECK (attached <= expected AND completed + failed <= attached),
  CHECK ((status = 'OPEN') = (outcome_message_id IS NULL))
);
-- Listing joins by grouping key, newest first.
CREATE INDEX join_group_key ON {schema}.join_group (grouping_key, created_at) WHERE grouping_key IS NOT NULL;
-- Timeouts: the earliest due open join is the first entry of this index; finished joins leave it.
CREATE INDEX join_group_due ON {schema}.join_group (timeout_at) WHERE status = 'OPEN' AND timeout_at IS NOT NULL;

-- Which message belongs to which join. message_id has no foreign key: a member may be work done outside Coop,
-- settled only by explicit reports, or a message launched after it was attached.
CREATE TABLE {schema}.join_member (
  join_id     uuid        NOT NULL REFERENCES {schema}.join_group (id) ON DELETE CASCADE,
  message_id  uuid        NOT NULL,
  state       text        NOT NULL DEFAULT 'PENDING' CHECK (state IN ('PENDING', 'COMPLETED', 'FAILED')),
  settled_by  text        CHECK (settled_by IN ('RUNS', 'REPORT')),
  attached_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  settled_at  timestamptz,
  PRIMARY KEY (join_id, message_id)
);
-- The engine's lookup when a run finishes: pending members of a message. Settled members leave this index, so a
-- message in no join (or only in settled memberships) costs one probe of a small index.
CREATE INDEX join_member_pending ON {schema}.join_member (message_id) WHERE state = 'PENDING';

-- Attaching a message and finishing its runs must not miss each other: attach takes this transaction-level advisory
-- lock exclusively, a transaction finishing runs takes it shared (in join_pending_members) before it looks for
-- members. Memory only; nothing is written.
CREATE FUNCTION {schema}.join_lock_key(message uuid) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT hashtextextended('{schema}.join_member:' || message::text, 0)
$$;

-- Called, before it commits, by every transaction that finishes runs, with the messages whose runs it finished (the
-- run's own and those of parents it committed by cascading completion). Takes the advisory locks shared, then, in a
-- new statement (a fresh snapshot: a volatile function's statements each get one), locks the pending memberships of
-- those messages and their joins, in join order, and returns them. When none is pending this is one probe of the
-- index join_member_pending.
CREATE FUNCTION {schema}.join_pending_members(messages uuid[])
  RETURNS TABLE (join_id uuid, message_id uuid) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
  PERFORM pg_advisory_xact_lock_shared({schema}.join_lock_key(x)) FROM unnest(messages) AS x;
  RETURN QUERY
    SELECT m.join_id, m.message_id
      FROM {schema}.join_member m JOIN {schema}.join_group g ON g.id = m.join_id
     WHERE m.message_id = ANY(messages) AND m.state = 'PENDING'
     ORDER BY m.join_id, m.message_id
       FOR UPDATE;
END $$;

-- A join started with a timeout (by any client, in any process) wakes idle engines' join timers: the payload
-- "#joins" (never a saga name) on the engines' channel makes each timer read the earliest timeout again.
CREATE FUNCTION {schema}.notify_join_timeout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('coop_' || TG_TABLE_SCHEMA, '#joins');
  RETURN NULL;
END $$;
CREATE TRIGGER join_group_timeout_notify AFTER INSERT ON {schema}.join_group
  FOR EACH ROW WHEN (NEW.timeout_at IS NOT NULL) EXECUTE FUNCTION {schema}.notify_join_timeout();
