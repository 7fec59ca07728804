-- Versioned sagas (rolling deploys). A saga has a version (default 1); a run keeps the version it was created with
-- (run.saga_version, set by the launch from saga_registration.version) and is claimed only by engines that have that
-- version of the saga, so a deploy that changes a saga's steps under a new version neither parks runs in flight nor
-- runs them with the wrong steps. Adding a column with a constant default rewrites nothing.
ALTER TABLE {schema}.run ADD COLUMN saga_version int NOT NULL DEFAULT 1;

-- Claiming and probing look for the runnable runs of one saga version: one index probe each.
DROP INDEX {schema}.run_runnable;
CREATE INDEX run_runnable ON {schema}.run (saga, saga_version, priority DESC, runnable_at) WHERE status = 'RUNNABLE';

-- The version new runs of the saga get: the highest version registered (and not retired).
ALTER TABLE {schema}.saga_registration ADD COLUMN version int NOT NULL DEFAULT 1;

-- Every registered version of every saga, kept until an operator retires it (which is refused while runs of that
-- version are unfinished). Engines upsert the versions they have when they start.
CREATE TABLE {schema}.saga_version (
  saga          text        NOT NULL,
  version       int         NOT NULL,
  registered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_engine   text,
  last_seen_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (saga, version)
);
INSERT INTO {schema}.saga_version (saga, version, registered_at, last_engine, last_seen_at)
SELECT saga, 1, registered_at, last_engine, last_seen_at FROM {schema}.saga_registration;

-- The versions each engine runs ("<saga>@<version>"); null for engines started before this version.
ALTER TABLE {schema}.engine ADD COLUMN versions text[];

-- Quiet wake-ups (version 9) per saga version: coop.local_sagas now names "<saga>@<version>" entries, the versions
-- the committing engine runs; a run of a version it lacks notifies the other engines as any other run would.
CREATE OR REPLACE FUNCTION {schema}.notify_new_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('coop_' || TG_TABLE_SCHEMA,
                    CASE WHEN s.due <= clock_timestamp() THEN s.saga
                         ELSE s.saga || ' ' || ceil(extract(epoch FROM (s.due - clock_timestamp())) * 1000)::bigint
                    END)
     FROM (SELECT saga, saga_version, min(runnable_at) AS due FROM new_runs WHERE status = 'RUNNABLE'
            GROUP BY saga, saga_version) s
    WHERE s.due > clock_timestamp()
       OR s.saga || '@' || s.saga_version
          <> ALL (coalesce(string_to_array(current_setting('coop.local_sagas', true), ','), '{}'));
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION {schema}.notify_woken_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.runnable_at <= clock_timestamp()
     AND NEW.saga || '@' || NEW.saga_version = ANY (string_to_array(current_setting('coop.local_sagas', true), ','))
  THEN
    RETURN NULL; -- the committing engine runs this saga version and wakes itself
  END IF;
  PERFORM pg_notify('coop_' || TG_TABLE_SCHEMA,
                    CASE WHEN NEW.runnable_at <= clock_timestamp() THEN NEW.saga
                         ELSE NEW.saga || ' '
                              || ceil(extract(epoch FROM (NEW.runnable_at - clock_timestamp())) * 1000)::bigint
                    END);
  RETURN NULL;
END $$;
