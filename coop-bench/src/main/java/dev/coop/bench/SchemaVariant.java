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
 * ({@code plan_cache_mode = force_generic_plan}) instead of PostgreSQL's choice between a generic and a custom plan.
 * (A change of code is compared with {@code --ab-builds}: two builds, not a variant of one.)
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
            case "run-fillfactor-100" -> List.of("ALTER TABLE coop.run SET (fillfactor = 100)");
            case "run-fillfactor-70" -> List.of("ALTER TABLE coop.run SET (fillfactor = 70)");
            case "run-fillfactor-50" -> List.of("ALTER TABLE coop.run SET (fillfactor = 50)");
            default -> throw new IllegalArgumentException(PROPERTY + " is shipped, pre-diet, no-inspection-indexes"
                    + ", run-fillfactor-100/70/50 or generic-plans, was '" + current()
                    + "'");
        };
        for (String s : sql) {
            db.exec(s);
        }
    }
}
