-- Coop schema, version 1: the append-only log (message, event), the hot run table, the topology.
-- {schema} is replaced by the configured, validated schema name.

-- UUID version 7: 48 bits of Unix milliseconds, then random bits (index-friendly, time-ordered).
CREATE FUNCTION {schema}.uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
              FROM 1 FOR 6),
      52, 1), 53, 1), 'hex')::uuid
$$;

-- Every message ever launched. Append-only.
CREATE TABLE {schema}.message (
  id         uuid        PRIMARY KEY,
  topic      text        NOT NULL,
  payload    jsonb       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The event log: the protocol and the audit trail. Append-only; read for inspection, never for claiming.
CREATE TABLE {schema}.event (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  message_id uuid        NOT NULL REFERENCES {schema}.message (id),
  type       text        NOT NULL CHECK (type IN ('EMITTED', 'SEEN', 'SUSPENDED', 'COMMITTED', 'ROLLING_BACK',
                                                  'ROLLBACK_EMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED',
                                                  'CANCELLATION_REQUESTED')),
  saga       text,
  engine     text,
  step       text,
  lineage    uuid[]      NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  started_at timestamptz,                     -- when the transaction that wrote it started its work (steps)
  exception  jsonb,
  context    text                             -- the cooperation context (JSON object text, kept byte for byte)
);
CREATE INDEX event_message ON {schema}.event (message_id);
CREATE INDEX event_root ON {schema}.event ((lineage[1]));

-- Which saga handles which topic: the registry that tells an emitting step whom to wait for.
CREATE TABLE {schema}.saga_registration (
  saga          text        PRIMARY KEY,
  topic         text        NOT NULL,
  registered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_engine   text        NOT NULL,
  last_seen_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX saga_registration_topic ON {schema}.saga_registration (topic);

-- Engines that ever started on this schema (for operators; nothing depends on liveness here).
CREATE TABLE {schema}.engine (
  id         text        PRIMARY KEY,
  name       text        NOT NULL,
  host       text        NOT NULL,
  sagas      text[]      NOT NULL,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  stopped_at timestamptz
);

-- One row per run (one saga handling one message): the hot state that makes claiming an index lookup.
-- Created in the emitting transaction, one per saga registered for the topic at that moment.
CREATE TABLE {schema}.run (
  id               uuid        PRIMARY KEY,
  message_id       uuid        NOT NULL REFERENCES {schema}.message (id),
  saga             text        NOT NULL,
  lineage          uuid[]      NOT NULL,            -- root message id, ..., parent run id, this run's id
  parent_id        uuid,                            -- the run whose step launched the message (null: global)
  parent_seq       int,                             -- which executed step instance of the parent launched it
  status           text        NOT NULL CHECK (status IN ('RUNNABLE', 'WAITING', 'PARKED', 'COMMITTED',
                                                         'ROLLED_BACK', 'ROLLBACK_FAILED')),
  phase            text        NOT NULL DEFAULT 'HAPPY' CHECK (phase IN ('HAPPY', 'ROLLBACK')),
  step_index       int         NOT NULL DEFAULT 0,  -- happy path: the step to execute next
  next_step        text,                            -- its name, to detect steps removed or renamed by a deploy
  final_step       text,                            -- set once the last step ran: the COMMITTED still to write
  steps_done       int         NOT NULL DEFAULT 0,  -- executed step instances (the next one's sequence number)
  history          int[]       NOT NULL DEFAULT '{}', -- per instance: step index, or -1-index for a handler run
  attempt          int         NOT NULL DEFAULT 1,  -- attempt of the next step under its retry policy
  pending_children int         NOT NULL DEFAULT 0,  -- unfinished awaited runs caused by the latest instance
  waiting_since    timestamptz,                     -- when the run started waiting for them
  awaited          boolean     NOT NULL DEFAULT true, -- false: the parent stopped waiting for this run (strategy)
  failed_children  int         NOT NULL DEFAULT 0,  -- of those, how many failed (rolled back / rollback failed)
  rollback_seq     int,                             -- rollback path: the instance being rolled back
  rollback_stage   text CHECK (rollback_stage IN ('START', 'CHILDREN', 'COMPENSATE')),
  rollback_cause   jsonb,                           -- the failure being compensated
  resolution       text CHECK (resolution IN ('RETRY', 'SKIP')), -- an operator's answer to a parked run
  runnable_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  retries          int         NOT NULL DEFAULT 0,  -- bookkeeping retries (database trouble), never step failures
  version          int         NOT NULL DEFAULT 0,  -- bumped by every transaction that moves the run
  context          text,                            -- the cooperation context after the latest transaction (JSON text)
  parent_context   text,                            -- rollback asked by the parent: its context at that moment
  result           text,                            -- the value the run returns (JSON text), read by its parent
  finally_done     int[]       NOT NULL DEFAULT '{}', -- steps whose finally part ran
  failure          jsonb,                           -- why it rolled back, failed to, or is parked
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  started_at       timestamptz,
  finished_at      timestamptz
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
-- run rows are updated at every step: vacuum them after 2 % dead rows, not the default 20 %, so that the partial
-- indexes that claiming reads stay small on a large table.
-- Claiming: the runnable runs of one saga, oldest due first. Finished runs leave this index.
CREATE INDEX run_runnable ON {schema}.run (saga, runnable_at) WHERE status = 'RUNNABLE';
CREATE INDEX run_message ON {schema}.run (message_id);
CREATE INDEX run_parent ON {schema}.run (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX run_active_root ON {schema}.run ((lineage[1])) WHERE status IN ('RUNNABLE', 'WAITING', 'PARKED');
CREATE INDEX run_parked ON {schema}.run (created_at) WHERE status = 'PARKED';
-- Listing runs newest first, all of them or one saga's (inspection; bounded by LIMIT).
CREATE INDEX run_created ON {schema}.run (created_at);
CREATE INDEX run_saga_created ON {schema}.run (saga, created_at);

-- Cancellation requests, one per scope (a run id, or a root message id for a whole hierarchy). A run gives up when
-- any element of its lineage has one; the check is a primary-key probe per lineage element.
CREATE TABLE {schema}.cancellation (
  scope_id     uuid        PRIMARY KEY,
  lineage      uuid[]      NOT NULL,
  failure      jsonb       NOT NULL,
  requested_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Raised (SQLSTATE CP001, the failure JSON as message) by the statement that would commit a step of a run whose
-- scope was cancelled meanwhile: the step's transaction rolls back and the run gives up.
CREATE FUNCTION {schema}.assert_not_cancelled(scope uuid[]) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
DECLARE
  f jsonb;
BEGIN
  SELECT c.failure INTO f FROM {schema}.cancellation c WHERE c.scope_id = ANY(scope) LIMIT 1;
  IF f IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'CP001', MESSAGE = f::text;
  END IF;
  RETURN true;
END $$;

-- Wake-ups: a run that becomes runnable notifies channel coop_<schema> with its saga name as payload; a run that
-- becomes due later (a delayed launch, a sleep) sends "<saga> <milliseconds until due>", so that idle engines
-- elsewhere set a timer instead of polling.
CREATE FUNCTION {schema}.notify_new_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('coop_' || TG_TABLE_SCHEMA,
                    CASE WHEN s.due <= clock_timestamp() THEN s.saga
                         ELSE s.saga || ' ' || ceil(extract(epoch FROM (s.due - clock_timestamp())) * 1000)::bigint
                    END)
     FROM (SELECT saga, min(runnable_at) AS due FROM new_runs WHERE status = 'RUNNABLE' GROUP BY saga) s;
  RETURN NULL;
END $$;
CREATE TRIGGER run_created_notify AFTER INSERT ON {schema}.run
  REFERENCING NEW TABLE AS new_runs FOR EACH STATEMENT EXECUTE FUNCTION {schema}.notify_new_runs();

CREATE FUNCTION {schema}.notify_woken_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('coop_' || TG_TABLE_SCHEMA,
                    CASE WHEN NEW.runnable_at <= clock_timestamp() THEN NEW.saga
                         ELSE NEW.saga || ' '
                              || ceil(extract(epoch FROM (NEW.runnable_at - clock_timestamp())) * 1000)::bigint
                    END);
  RETURN NULL;
END $$;
-- Fires when a run becomes runnable, and when a runnable run's due time moves (a sleep, a retry, a barrier timer).
CREATE TRIGGER run_woken_notify AFTER UPDATE OF status, runnable_at ON {schema}.run
  FOR EACH ROW WHEN (NEW.status = 'RUNNABLE'
                     AND (OLD.status <> 'RUNNABLE' OR NEW.runnable_at IS DISTINCT FROM OLD.runnable_at))
  EXECUTE FUNCTION {schema}.notify_woken_run();
