-- Trigger checks that cost less per statement (issue 16). PostgreSQL compiles a row trigger's WHEN once per statement
-- that writes the table (it reads the stored expression back from its text and simplifies it), and copies every
-- trigger's stored text for each such statement; at a W1 step's scale that was 5 % of the machine's CPU.
--
-- * The launch notification's WHEN appended the version to the saga name as `text || integer`: PostgreSQL's
--   operator for that (textanycat) is a SQL function, which the simplification inlines by parsing its body, for
--   every insert into run. Cast first, and `text || text` is a plain C function.
-- * The release of an ordering key tests only whether the run has a key; the status test moves into the function
--   (keyed runs are rare: the other runs no longer compile the status lists).
DROP TRIGGER run_created_notify ON {schema}.run;
CREATE TRIGGER run_created_notify AFTER INSERT ON {schema}.run FOR EACH ROW
  WHEN (NEW.status = 'RUNNABLE'
        AND (NEW.runnable_at > clock_timestamp()
             OR NEW.saga || '@' || NEW.saga_version::text
                <> ALL (coalesce(string_to_array(current_setting('coop.local_sagas', true), ','), '{}'))))
  EXECUTE FUNCTION {schema}.notify_new_run();

CREATE OR REPLACE FUNCTION {schema}.release_keyed_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED')
     AND OLD.status NOT IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED') THEN
    PERFORM {schema}.ordering_key_lock(NEW.saga, NEW.ordering_key);
    PERFORM {schema}.release_ordering_key(NEW.saga, NEW.ordering_key);
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER run_keyed_release ON {schema}.run;
CREATE TRIGGER run_keyed_release AFTER UPDATE OF status ON {schema}.run
  FOR EACH ROW WHEN (OLD.ordering_key IS NOT NULL) EXECUTE FUNCTION {schema}.release_keyed_run();
