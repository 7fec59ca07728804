-- Coop schema: schedules (periodic execution). {schema} is replaced by the configured, validated schema name.

-- One row per schedule: launch `payload` on `topic` (global scope) at every due time. Hot state, updated in place:
-- firing a period moves next_at on in the same transaction that launches the message.
CREATE TABLE {schema}.schedule (
  name            text        PRIMARY KEY,
  topic           text        NOT NULL,
  payload         jsonb       NOT NULL,
  kind            text        NOT NULL CHECK (kind IN ('PERIOD', 'CRON')),
  period_ms       bigint      CHECK (period_ms >= 1000),   -- PERIOD: fixed rate
  cron            text,                                     -- CRON: 5 fields (Unix) or 6 (seconds first)
  zone            text,                                     -- CRON: the time zone the expression is read in
  overlap         boolean     NOT NULL DEFAULT false,       -- fire while the previous period's message still runs
  paused          boolean     NOT NULL DEFAULT false,
  next_at         timestamptz,                              -- due time; null when paused or no time is left
  last_due_at     timestamptz,                              -- the due time of the period fired last
  last_fired_at   timestamptz,                              -- when it was fired (clock_timestamp())
  last_message_id uuid,                                     -- the message it launched
  skipped         bigint      NOT NULL DEFAULT 0,           -- periods not fired because the previous one still ran
  last_skipped_at timestamptz,
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK ((kind = 'PERIOD') = (period_ms IS NOT NULL)),
  CHECK ((kind = 'CRON') = (cron IS NOT NULL AND zone IS NOT NULL))
);
-- Finding due schedules and the next due time: an index probe, whatever the number of schedules.
CREATE INDEX schedule_due ON {schema}.schedule (next_at) WHERE next_at IS NOT NULL;

-- Wake-ups: a schedule that became due earlier than before (created, replaced, resumed) notifies channel
-- coop_<schema> with the payload '#schedules' (never a saga name: saga names start with a letter or digit), so that
-- waiting engines re-read the next due time. Firing only moves next_at later and notifies nobody.
CREATE FUNCTION {schema}.notify_schedule() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('coop_' || TG_TABLE_SCHEMA, '#schedules');
  RETURN NULL;
END $$;
CREATE TRIGGER schedule_created_notify AFTER INSERT ON {schema}.schedule
  FOR EACH ROW WHEN (NEW.next_at IS NOT NULL) EXECUTE FUNCTION {schema}.notify_schedule();
CREATE TRIGGER schedule_moved_notify AFTER UPDATE OF next_at ON {schema}.schedule
  FOR EACH ROW WHEN (NEW.next_at < OLD.next_at OR (OLD.next_at IS NULL AND NEW.next_at IS NOT NULL))
  EXECUTE FUNCTION {schema}.notify_schedule();
