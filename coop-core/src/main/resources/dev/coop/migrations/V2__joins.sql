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
