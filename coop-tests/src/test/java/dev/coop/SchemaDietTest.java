package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.internal.store.Migrations;
import dev.coop.internal.store.SchemaName;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Schema version 13 takes off the hot tables what cost every step: the text CHECKs on {@code event} and {@code run}
 * and their foreign keys to {@code message}. Other tables keep theirs.
 */
class SchemaDietTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    private static final String HOT_TABLE_CONSTRAINTS = """
            SELECT conrelid::regclass::text || ' ' || contype::text || ' ' || conname FROM pg_constraint
             WHERE connamespace = ?::regnamespace AND conrelid::regclass::text IN (?, ?, ?) AND contype IN ('c', 'f')
             ORDER BY 1""";

    @Test
    void the_hot_tables_have_no_check_constraints_and_no_foreign_keys() throws Exception {
        Migrations.apply(db.dataSource(), new SchemaName("diet_fresh"));
        assertThat(constraints(db.dataSource(), "diet_fresh")).isEmpty();
    }

    @Test
    void a_schema_of_version_9_with_history_loses_them_and_keeps_its_rows() throws Exception {
        SchemaName schema = new SchemaName("diet_v9");
        DataSource ds = db.dataSource();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA diet_v9");
            st.execute("CREATE TABLE diet_v9.schema_version (version int PRIMARY KEY, name text NOT NULL, "
                    + "applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
            String[] v9 = {"V1__foundation.sql", "V2__joins.sql", "V3__schedules.sql", "V4__claims.sql",
                    "V5__finally_launches.sql", "V6__retention.sql", "V7__step_instances.sql",
                    "V8__operator_audit.sql", "V9__quiet_wakeups.sql"};
            for (int i = 0; i < v9.length; i++) {
                st.execute(StepInstancesMigrationTest.version(v9[i], schema));
                st.execute("INSERT INTO diet_v9.schema_version (version, name) VALUES (" + (i + 1) + ", '" + v9[i]
                        + "')");
            }
            st.execute("""
                    INSERT INTO diet_v9.message (id, topic, payload)
                    VALUES ('00000000-0000-0000-0000-000000000001', 't', '{}');
                    INSERT INTO diet_v9.run (id, message_id, saga, lineage, status)
                    VALUES ('00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-000000000001', 's',
                            '{00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-00000000000a}',
                            'RUNNABLE');
                    INSERT INTO diet_v9.event (message_id, type, lineage)
                    VALUES ('00000000-0000-0000-0000-000000000001', 'EMITTED',
                            '{00000000-0000-0000-0000-000000000001}');
                    """);
        }
        assertThat(constraints(ds, "diet_v9")).hasSize(7); // 5 CHECKs, 2 foreign keys

        Migrations.apply(ds, schema);

        assertThat(constraints(ds, "diet_v9")).isEmpty();
        try (Connection c = ds.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(
                        "SELECT (SELECT count(*) FROM diet_v9.run), (SELECT count(*) FROM diet_v9.event)")) {
            rs.next();
            assertThat(rs.getInt(1)).isEqualTo(1);
            assertThat(rs.getInt(2)).isEqualTo(1);
        }
        try (Connection c = ds.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_constraint "
                        + "WHERE connamespace = 'diet_v9'::regnamespace AND contype IN ('c', 'f')")) {
            rs.next();
            assertThat(rs.getInt(1)).as("the other tables keep their constraints").isPositive();
        }
    }

    private static List<String> constraints(DataSource ds, String schema) throws Exception {
        List<String> found = new ArrayList<>();
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(HOT_TABLE_CONSTRAINTS)) {
            ps.setString(1, schema);
            ps.setString(2, schema + ".run");
            ps.setString(3, schema + ".event");
            ps.setString(4, schema + ".message");
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    found.add(rs.getString(1));
                }
            }
        }
        return found;
    }
}
