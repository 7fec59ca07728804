package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.internal.store.Migrations;
import dev.coop.internal.store.SchemaName;
import dev.coop.test.CoopDatabase;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Schema V7 moved each run's history array into run_step rows and per-step counts (the step log since V23), for runs in flight. */
class StepInstancesMigrationTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static String version(String name, SchemaName schema) throws Exception {
        try (InputStream in = Migrations.class.getResourceAsStream("/dev/coop/migrations/" + name)) {
            return schema.sql(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    @Test
    void histories_of_runs_in_flight_become_instances_and_counts() throws Exception {
        SchemaName schema = new SchemaName("mig_v4");
        DataSource ds = db.dataSource();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA mig_v4");
            st.execute("CREATE TABLE mig_v4.schema_version (version int PRIMARY KEY, name text NOT NULL, "
                    + "applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
            String[] v4 = {"V1__foundation.sql", "V2__joins.sql", "V3__schedules.sql", "V4__claims.sql"};
            for (int i = 0; i < v4.length; i++) {
                st.execute(version(v4[i], schema));
                st.execute("INSERT INTO mig_v4.schema_version (version, name) VALUES (" + (i + 1) + ", '" + v4[i]
                        + "')");
            }
            st.execute("""
                    INSERT INTO mig_v4.message (id, topic, payload)
                    VALUES ('00000000-0000-0000-0000-000000000001', 't', '{}');
                    INSERT INTO mig_v4.run (id, message_id, saga, lineage, status, steps_done, history)
                    VALUES ('00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-000000000001', 's',
                            '{00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-00000000000a}', 'RUNNABLE',
                            6, '{0,1,1,-2,1,3}'),
                           ('00000000-0000-0000-0000-00000000000b', '00000000-0000-0000-0000-000000000001', 's',
                            '{00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-00000000000b}', 'RUNNABLE',
                            0, '{}');
                    """);
        }
        Migrations.apply(ds, schema);
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            List<String> rows = new ArrayList<>();
            // kept by the step log since version 23: the instances a run executed are its events' step_seq
            try (ResultSet rs = st.executeQuery("SELECT e.step_seq, e.instance, e.iteration FROM mig_v4.event e "
                    + "JOIN mig_v4.run r ON r.message_id = e.message_id AND r.saga = e.saga "
                    + "WHERE r.id = '00000000-0000-0000-0000-00000000000a' AND e.step_seq IS NOT NULL "
                    + "ORDER BY e.step_seq")) {
                while (rs.next()) {
                    rows.add(rs.getInt(1) + ":" + rs.getInt(2) + "#" + rs.getInt(3));
                }
            }
            // step 1 ran three times; the handler run (-2) handled its second execution
            assertThat(rows).containsExactly("0:0#1", "1:1#1", "2:1#2", "3:-2#2", "4:1#3", "5:3#1");
            try (ResultSet rs = st.executeQuery("SELECT id, iterations::text FROM mig_v4.run ORDER BY id")) {
                rs.next();
                assertThat(rs.getString(2)).isEqualTo("{1,3,0,1}");
                rs.next();
                assertThat(rs.getString(2)).isEqualTo("{}");
            }
            try (ResultSet rs = st.executeQuery("SELECT count(*) FROM information_schema.columns "
                    + "WHERE table_schema = 'mig_v4' AND table_name = 'run' AND column_name = 'history'")) {
                rs.next();
                assertThat(rs.getInt(1)).isZero();
            }
        }
    }
}
