package dev.coop.internal.store;

import dev.coop.failure.CoopStoreException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Versioned schema migrations, applied in order under a transaction-scoped advisory lock so that engines starting
 * together apply each version once. Versions live in {@code dev/coop/migrations/V<n>__<name>.sql}. On a database with
 * the {@code citus} extension, {@link CitusLayout} then distributes the tables in the same transaction.
 */
public final class Migrations {
    private static final Logger log = LoggerFactory.getLogger(Migrations.class);
    private static final List<String> VERSIONS = List.of("V1__foundation.sql", "V2__joins.sql", "V3__schedules.sql",
            "V4__claims.sql", "V5__finally_launches.sql", "V6__retention.sql", "V7__step_instances.sql",
            "V8__operator_audit.sql", "V9__quiet_wakeups.sql", "V10__launch_options.sql", "V11__saga_limits.sql",
            "V12__saga_versions.sql", "V13__schema_diet.sql", "V14__rate_window.sql",
            "V15__continuation_reserve.sql", "V16__seen_once.sql",
            "V17__row_launch_notify.sql", "V18__light_trigger_checks.sql", "V19__join_check.sql",
            "V20__external_tasks.sql", "V21__attempt_history.sql", "V22__run_counts.sql",
            "V23__step_log.sql", "V24__cancellation_races.sql", "V25__compensating_steps.sql",
            "V26__task_compensation.sql", "V27__explicit_writes.sql",
            "V28__hot_indexes.sql", "V29__root_id.sql", "V30__step_guard.sql", "V31__citus_keys.sql");
    private static final long LOCK_NAMESPACE = 0x436F6F70L << 32; // "Coop"

    private Migrations() {
    }

    /** Brings the schema to the latest version; does nothing when it is already there. */
    public static void apply(DataSource dataSource, SchemaName schema) {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                applyLocked(c, schema);
                CitusLayout.applyIfCitus(c, schema); // on a Citus database only: see its Javadoc
                c.commit();
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw new CoopStoreException(
                    "Could not migrate schema '" + schema.value() + "': " + e.getMessage(), e);
        }
    }

    /** The SQL of every version, as a team that runs migrations itself would apply it. */
    public static String script(SchemaName schema) {
        StringBuilder sql = new StringBuilder("CREATE SCHEMA IF NOT EXISTS " + schema.value() + ";\n")
                .append(schema.sql(VERSION_TABLE)).append(";\n");
        for (int i = 0; i < VERSIONS.size(); i++) {
            sql.append("\n-- ").append(VERSIONS.get(i)).append('\n').append(schema.sql(read(VERSIONS.get(i))))
                    .append("\nINSERT INTO ").append(schema.value())
                    .append(".schema_version (version, name) VALUES (")
                    .append(i + 1).append(", '").append(VERSIONS.get(i)).append("');\n");
        }
        return sql.toString();
    }

    /** The schema's current version, 0 when it has no Coop tables. */
    public static int currentVersion(Connection c, SchemaName schema) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT to_regclass(?) IS NOT NULL")) {
            ps.setString(1, schema.value() + ".schema_version");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return 0;
                }
            }
        }
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(
                        schema.sql("SELECT coalesce(max(version), 0) FROM {schema}.schema_version"))) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private static final String VERSION_TABLE = """
            CREATE TABLE IF NOT EXISTS {schema}.schema_version (
              version    int         PRIMARY KEY,
              name       text        NOT NULL,
              applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
            )""";

    private static void applyLocked(Connection c, SchemaName schema) throws SQLException {
        try (PreparedStatement lock = c.prepareStatement("SELECT pg_advisory_xact_lock(?)")) {
            lock.setLong(1, LOCK_NAMESPACE | (schema.value().hashCode() & 0xFFFFFFFFL));
            lock.execute();
        }
        int current = currentVersion(c, schema);
        if (current > VERSIONS.size()) {
            throw new CoopStoreException("Schema '" + schema.value() + "' is at version " + current
                    + ", newer than this Coop library knows (" + VERSIONS.size() + "); upgrade Coop", null);
        }
        if (current == VERSIONS.size()) {
            return;
        }
        try (Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA IF NOT EXISTS " + schema.value());
            st.execute(schema.sql(VERSION_TABLE));
            for (int v = current + 1; v <= VERSIONS.size(); v++) {
                String name = VERSIONS.get(v - 1);
                st.execute(schema.sql(read(name)));
                try (PreparedStatement ps = c.prepareStatement(
                        schema.sql("INSERT INTO {schema}.schema_version (version, name) VALUES (?, ?)"))) {
                    ps.setInt(1, v);
                    ps.setString(2, name);
                    ps.executeUpdate();
                }
                log.info("Applied Coop migration {} to schema {}", name, schema.value());
            }
        }
    }

    private static String read(String name) {
        try (InputStream in = Migrations.class.getResourceAsStream("/dev/coop/migrations/" + name)) {
            if (in == null) {
                throw new IllegalStateException("Migration " + name + " is missing from the Coop jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("Cannot read migration " + name, e);
        }
    }
}
