-- Who asked an operator action, when and why: one row per action taken through a tool that records it (the
-- dashboard does; CoopClient.recordAudit). Read per hierarchy (its root message), newest last.
CREATE TABLE {schema}.audit (
  id          bigserial PRIMARY KEY,
  message_id  uuid NOT NULL,
  lineage     uuid[],
  action      text NOT NULL,
  actor       text NOT NULL,
  reason      text NOT NULL,
  outcome     text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX audit_by_message ON {schema}.audit (message_id, id);
