-- Wake-ups without self-notification. An engine's emit and advance statements name, in the transaction-local
-- setting coop.local_sagas (comma-separated; saga names cannot contain commas), the sagas this engine runs: it wakes
-- its own workers in-process after the commit, so a notification for them would only make every committing
-- transaction queue on PostgreSQL's notification lock (taken at commit and held until the commit is flushed) and
-- wake the same engine a second time. Runs due later still notify ("<saga> <milliseconds>"), and so does every
-- transaction that does not set the setting (clients without an engine, operators, user SQL).
CREATE OR REPLACE FUNCTION {schema}.notify_new_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('coop_' || TG_TABLE_SCHEMA,
                    CASE WHEN s.due <= clock_timestamp() THEN s.saga
                         ELSE s.saga || ' ' || ceil(extract(epoch FROM (s.due - clock_timestamp())) * 1000)::bigint
                    END)
     FROM (SELECT saga, min(runnable_at) AS due FROM new_runs WHERE status = 'RUNNABLE' GROUP BY saga) s
    WHERE s.due > clock_timestamp()
       OR s.saga <> ALL (coalesce(string_to_array(current_setting('coop.local_sagas', true), ','), '{}'));
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION {schema}.notify_woken_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.runnable_at <= clock_timestamp()
     AND NEW.saga = ANY (string_to_array(current_setting('coop.local_sagas', true), ',')) THEN
    RETURN NULL; -- the committing engine runs this saga and wakes itself
  END IF;
  PERFORM pg_notify('coop_' || TG_TABLE_SCHEMA,
                    CASE WHEN NEW.runnable_at <= clock_timestamp() THEN NEW.saga
                         ELSE NEW.saga || ' '
                              || ceil(extract(epoch FROM (NEW.runnable_at - clock_timestamp())) * 1000)::bigint
                    END);
  RETURN NULL;
END $$;
