-- Launch notifications decided row by row, in the trigger's WHEN. The statement-level trigger (version 1, made quiet
-- for the committing engine's own sagas in versions 9 and 12) ran for every insert into run, whoever inserted and
-- whatever it inserted: PostgreSQL collected the inserted rows in a transition table, queued the trigger and called
-- the PL/pgSQL function, whose query grouped them and, for an engine's own sagas due now, notified nobody. That cost
-- an engine's launch about 35 microseconds of server time for nothing. A row-level trigger whose WHEN is false queues
-- nothing and calls nothing: the runs an engine wakes itself (its own saga versions, due now; coop.local_sagas as in
-- version 12) cost a comparison. Every other runnable run notifies, one call per row: PostgreSQL sends a transaction's
-- identical notifications once, so a fan-out due now still notifies each saga once; runs due later notify
-- "<saga> <milliseconds>" as before, one per distinct delay.
DROP TRIGGER run_created_notify ON {schema}.run;
DROP FUNCTION {schema}.notify_new_runs();

CREATE FUNCTION {schema}.notify_new_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('coop_' || TG_TABLE_SCHEMA,
                    CASE WHEN NEW.runnable_at <= clock_timestamp() THEN NEW.saga
                         ELSE NEW.saga || ' '
                              || ceil(extract(epoch FROM (NEW.runnable_at - clock_timestamp())) * 1000)::bigint
                    END);
  RETURN NULL;
END $$;

CREATE TRIGGER run_created_notify AFTER INSERT ON {schema}.run FOR EACH ROW
  WHEN (NEW.status = 'RUNNABLE'
        AND (NEW.runnable_at > clock_timestamp()
             OR NEW.saga || '@' || NEW.saga_version
                <> ALL (coalesce(string_to_array(current_setting('coop.local_sagas', true), ','), '{}'))))
  EXECUTE FUNCTION {schema}.notify_new_run();
