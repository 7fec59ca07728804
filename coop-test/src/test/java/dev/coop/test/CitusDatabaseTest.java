package dev.coop.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The kit's Citus cluster: three nodes, the workers registered, a table distributed over both, queries routed. */
class CitusDatabaseTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase(4);

    @Test
    void a_database_has_citus_on_every_node_and_two_workers(DataSource dataSource) throws SQLException {
        assertThat(db.cluster().ports()).hasSize(3).doesNotHaveDuplicates();
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            assertThat(strings(st, "SELECT citus_version()").get(0)).startsWith("Citus 13.");
            assertThat(strings(st, "SELECT nodeport::text FROM pg_dist_node WHERE noderole = 'primary'"
                    + " ORDER BY nodeport")).hasSize(3);
        }
        for (int port : db.cluster().ports()) {
            try (Connection c = db.cluster().connect(port, db.databaseName()); Statement st = c.createStatement()) {
                assertThat(strings(st, "SELECT extname FROM pg_extension WHERE extname = 'citus'"))
                        .containsExactly("citus");
            }
        }
    }

    @Test
    void a_table_distributed_by_a_uuid_spreads_over_both_workers_and_a_query_by_it_is_one_task(DataSource dataSource)
            throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE spread (id uuid PRIMARY KEY, v int)");
            st.execute("SELECT create_distributed_table('spread', 'id')");
            st.execute("INSERT INTO spread SELECT gen_random_uuid(), g FROM generate_series(1, 100) g");
            assertThat(strings(st,
                    "SELECT DISTINCT nodeport::text FROM citus_shards WHERE table_name = 'spread'::regclass"))
                    .hasSize(2);
            String plan = String.join("\n",
                    strings(st, "EXPLAIN SELECT v FROM spread WHERE id = '0190a1b2-0000-7000-8000-000000000001'"));
            assertThat(plan).contains("Task Count: 1");
        }
    }

    static List<String> strings(Statement st, String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }
}
