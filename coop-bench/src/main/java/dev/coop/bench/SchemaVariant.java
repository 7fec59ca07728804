package dev.coop.bench;

import java.util.List;

/**
 * The schema a run's engine gets, changed after migration for A/B runs of schema work (benchmark only; system
 * property {@code dev.coop.bench.schema}): {@code shipped} (default) leaves it as migrated; {@code pre-diet} puts back
 * what schema version 13 dropped (the text CHECKs on {@code event} and {@code run}, their foreign keys to
 * {@code message}); {@code no-inspection-indexes} also drops the two indexes only inspection reads
 * ({@code run_created}, {@code run_saga_created}), to price them; {@code run-fillfactor-N} sets the fill factor of
 * {@code run} (the share of each page that inserts fill, the rest is kept for updates of its rows, which can then be
 * HOT: no index entries); {@code generic-plans} makes the database plan prepared statements once
 * ({@code plan_cache_mode = force_generic_plan}) instead of PostgreSQL's choice between a generic and a custom plan;
 * {@code statement-notify} puts back the launch notification of schema versions 1-16 (a statement-level trigger);
 * {@code v17-triggers} puts back the run's trigger checks of schema version 17.
 */
final class SchemaVariant {
    static final String PROPERTY = "dev.coop.bench.schema";

    private static final List<String> PRE_DIET = List.of("""
            ALTER TABLE coop.event ADD CONSTRAINT event_type_check
              CHECK (type IN ('EMITTED', 'SEEN', 'SUSPENDED', 'COMMITTED', 'ROLLING_BACK', 'ROLLBACK_EMITTED',
                              'ROLLED_BACK', 'ROLLBACK_FAILED', 'CANCELLATION_REQUESTED'))""",
            "ALTER TABLE coop.event ADD CONSTRAINT event_message_id_fkey FOREIGN KEY (message_id)"
                    + " REFERENCES coop.message (id)",
            """
                    ALTER TABLE coop.run ADD CONSTRAINT run_status_check
                      CHECK (status IN ('RUNNABLE', 'WAITING', 'PARKED', 'COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED'))""",
            "ALTER TABLE coop.run ADD CONSTRAINT run_phase_check CHECK (phase IN ('HAPPY', 'ROLLBACK'))",
            "ALTER TABLE coop.run ADD CONSTRAINT run_rollback_stage_check"
                    + " CHECK (rollback_stage IN ('START', 'CHILDREN', 'COMPENSATE', 'FINISH'))",
            "ALTER TABLE coop.run ADD CONSTRAINT run_resolution_check CHECK (resolution IN ('RETRY', 'SKIP'))",
            "ALTER TABLE coop.run ADD CONSTRAINT run_message_id_fkey FOREIGN KEY (message_id)"
                    + " REFERENCES coop.message (id)");

    private static final List<String> NO_INSPECTION_INDEXES = List.of("DROP INDEX IF EXISTS coop.run_created",
            "DROP INDEX IF EXISTS coop.run_saga_created");

    /** The launch notification as before schema version 17: a statement-level trigger over a transition table. */
    private static final List<String> STATEMENT_NOTIFY = List.of(
            "DROP TRIGGER IF EXISTS run_created_notify ON coop.run",
            """
                    CREATE OR REPLACE FUNCTION coop.notify_new_runs() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                      PERFORM pg_notify('coop_' || TG_TABLE_SCHEMA,
                                        CASE WHEN s.due <= clock_timestamp() THEN s.saga
                                             ELSE s.saga || ' '
                                                  || ceil(extract(epoch FROM (s.due - clock_timestamp())) * 1000)::bigint
                                        END)
                         FROM (SELECT saga, saga_version, min(runnable_at) AS due FROM new_runs
                                WHERE status = 'RUNNABLE' GROUP BY saga, saga_version) s
                        WHERE s.due > clock_timestamp()
                           OR s.saga || '@' || s.saga_version
                              <> ALL (coalesce(string_to_array(current_setting('coop.local_sagas', true), ','), '{}'));
                      RETURN NULL;
                    END $$""",
            "CREATE TRIGGER run_created_notify AFTER INSERT ON coop.run REFERENCING NEW TABLE AS new_runs"
                    + " FOR EACH STATEMENT EXECUTE FUNCTION coop.notify_new_runs()");

    /** The run's trigger checks as before schema version 18 (the launch's WHEN appends `text || integer`). */
    private static final List<String> V17_TRIGGERS = List.of(
            "DROP TRIGGER run_created_notify ON coop.run",
            """
                    CREATE TRIGGER run_created_notify AFTER INSERT ON coop.run FOR EACH ROW
                      WHEN (NEW.status = 'RUNNABLE'
                            AND (NEW.runnable_at > clock_timestamp()
                                 OR NEW.saga || '@' || NEW.saga_version
                                    <> ALL (coalesce(string_to_array(current_setting('coop.local_sagas', true), ','),
                                                     '{}'))))
                      EXECUTE FUNCTION coop.notify_new_run()""",
            """
                    CREATE OR REPLACE FUNCTION coop.release_keyed_run() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                      PERFORM coop.ordering_key_lock(NEW.saga, NEW.ordering_key);
                      PERFORM coop.release_ordering_key(NEW.saga, NEW.ordering_key);
                      RETURN NULL;
                    END $$""",
            "DROP TRIGGER run_keyed_release ON coop.run",
            """
                    CREATE TRIGGER run_keyed_release AFTER UPDATE OF status ON coop.run
                      FOR EACH ROW WHEN (OLD.ordering_key IS NOT NULL
                                         AND NEW.status IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED')
                                         AND OLD.status NOT IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED'))
                      EXECUTE FUNCTION coop.release_keyed_run()""");

    private SchemaVariant() {
    }

    static String current() {
        return System.getProperty(PROPERTY, "shipped");
    }

    /** Applies the current variant to a migrated schema {@code coop} (once: a reused database keeps it). */
    static void apply(BenchDb db) {
        List<String> sql = switch (current()) {
            case "shipped" -> List.of();
            case "pre-diet" -> db.longValue("SELECT count(*) FROM pg_constraint WHERE conname = 'run_status_check'"
                    + " AND connamespace = 'coop'::regnamespace") > 0 ? List.of() : PRE_DIET;
            case "no-inspection-indexes" -> NO_INSPECTION_INDEXES;
            case "generic-plans" -> List.of("ALTER DATABASE " + db.name // a generated name, not input
                    + " SET plan_cache_mode = force_generic_plan");
            case "statement-notify" -> STATEMENT_NOTIFY;
            case "v17-triggers" -> V17_TRIGGERS;
            case "run-fillfactor-100" -> List.of("ALTER TABLE coop.run SET (fillfactor = 100)");
            case "run-fillfactor-70" -> List.of("ALTER TABLE coop.run SET (fillfactor = 70)");
            case "run-fillfactor-50" -> List.of("ALTER TABLE coop.run SET (fillfactor = 50)");
            default -> throw new IllegalArgumentException(PROPERTY + " is shipped, pre-diet, no-inspection-indexes"
                    + ", statement-notify, v17-triggers, run-fillfactor-100/70/50 or generic-plans, was '" + current()
                    + "'");
        };
        for (String s : sql) {
            db.exec(s);
        }
    }
}
