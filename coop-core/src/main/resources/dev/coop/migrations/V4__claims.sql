-- A step's transaction must be the one that claimed its run: a step that ends it (COMMIT, ROLLBACK or END sent as
-- SQL on its connection) would otherwise let the run be claimed and its step run again, or commit half of it. The
-- claim reads pg_current_xact_id(); the statement that advances the run compares it and, only on a mismatch, calls
-- this function, which fails the statement with SQLSTATE CP002.
CREATE FUNCTION {schema}.claim_lost() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'CP002',
    MESSAGE = 'The step ended the transaction that claimed its run (COMMIT, ROLLBACK or END on its connection); '
              || 'Coop commits or rolls back a step''s transaction itself, so this step cannot be committed';
END $$;
