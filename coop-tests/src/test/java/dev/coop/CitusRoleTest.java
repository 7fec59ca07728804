package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.CitusDatabase;
import dev.coop.test.StepRecorder;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Engines and clients whose database role was granted Coop's tables, not their owner (docs/guide/citus.md, "The
 * claim"): the schema migrated by its owner, then hierarchies launched and run by the other role. Citus lets only a
 * table's owner take the shard metadata lock each claim takes ({@code lock_shard_metadata}), which the claim takes
 * through a {@code SECURITY DEFINER} function of the layout; before, every claim of such an engine failed with
 * {@code must be owner of table run}.
 */
class CitusRoleTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void an_engine_whose_role_was_granted_coops_tables_without_owning_them_claims_and_commits() throws Exception {
        Coop.client(db.dataSource()); // migrated (and distributed) by the owner
        String role = "coop_app_" + Integer.toHexString(db.databaseName().hashCode() & 0x7fffffff);
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            // the role's name is the test's own (hex digits): no value from outside
            st.execute("CREATE ROLE " + role + " LOGIN");
            st.execute("GRANT USAGE ON SCHEMA coop TO " + role);
            st.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA coop TO " + role);
            st.execute("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA coop TO " + role);
        }
        assertThat(CitusFaults.count(db.dataSource(), "SELECT count(*)::int FROM pg_tables WHERE schemaname = 'coop'"
                + " AND tableowner = ?", role)).as("tables the role owns").isZero();
        Topic<Empty> rootTopic = Topic.of("role-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("role-child", Empty.class);
        StepRecorder recorder = new StepRecorder();
        Saga<Empty> root = Saga.on(rootTopic, "role-root")
                .step("launch", step -> {
                    recorder.record(step);
                    step.launch(childTopic, new Empty());
                })
                .step("last", recorder::record)
                .build();
        Saga<Empty> child = Saga.on(childTopic, "role-child").step("work", recorder::record).build();
        try (HikariDataSource pool = pool(role);
                CoopEngine engine = CitusHappyPathTest.engine(pool).name("role").workers(2).register(root, child)
                        .start()) {
            CoopClient client = Coop.client(pool);
            List<MessageId> launched = new ArrayList<>();
            for (int i = 0; i < 4; i++) { // roots on both workers, most likely
                launched.add(client.launch(rootTopic, new Empty()));
            }
            for (MessageId id : launched) {
                assertThat(client.awaitCompletion(id, WAIT)).as("hierarchy %s", id).isEqualTo(Outcome.COMMITTED);
            }
            recorder.assertEachStepRanOnce();
            assertThat(recorder.total()).isEqualTo(3 * launched.size());
        }
    }

    private static HikariDataSource pool(String role) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(db.jdbcUrl());
        config.setUsername(role);
        config.setPassword("");
        config.setMaximumPoolSize(5);
        config.setPoolName("role-pool");
        return new HikariDataSource(config);
    }
}
