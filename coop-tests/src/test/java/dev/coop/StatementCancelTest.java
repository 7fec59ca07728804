package dev.coop;

import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.StepGate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * When the server cancels one of Coop's own statements (lock_timeout, statement_timeout, pg_cancel_backend) after the
 * user's code returned, that is database trouble, retried later, never a step failure; the same error raised by the
 * user's own statement fails the step.
 */
class StatementCancelTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    /** A pool whose sessions give up waiting for a lock after 200 ms. */
    private static HikariDataSource impatientPool() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(db.jdbcUrl());
        config.setUsername(db.server().user());
        config.setPassword(db.server().password());
        config.setMaximumPoolSize(8);
        config.setConnectionInitSql("SET lock_timeout = '200ms'");
        return new HikariDataSource(config);
    }

    @Test
    void a_lock_timeout_on_coops_own_statement_is_retried_and_the_hierarchy_commits() throws Exception {
        Topic<Empty> parentTopic = Topic.of("impatient-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("impatient-child", Empty.class);
        StepGate gate = new StepGate(WAIT);
        Saga<Empty> parent = Saga.on(parentTopic, "impatient-parent").step("launch", step -> {
            step.launch(childTopic, new Empty());
        }).step("write", step -> {
        }).build();
        Saga<Empty> child = Saga.on(childTopic, "impatient-child").step("first", step -> {
        }).compensateWith((step, cause) -> {
        }).step("second", step -> gate.pass()).build();
        try (HikariDataSource pool = impatientPool();
                CoopEngine engine = Coop.engine(pool).register(parent, child).workers(4).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(parentTopic, new Empty());
            gate.awaitArrivals(1, WAIT);
            try (Connection holder = db.dataSource().getConnection()) {
                holder.setAutoCommit(false);
                UUID parentRun;
                try (PreparedStatement ps = holder.prepareStatement(
                        "SELECT id FROM coop.run WHERE message_id = ? FOR UPDATE")) {
                    ps.setObject(1, id.value());
                    try (ResultSet rs = ps.executeQuery()) {
                        assertThat(rs.next()).isTrue();
                        parentRun = rs.getObject(1, UUID.class);
                    }
                }
                gate.open(); // the child's last step returns; counting it off at the parent waits for our lock
                Await.until("the child's commit was cancelled by lock_timeout and postponed", WAIT, () -> {
                    try (Connection c = db.dataSource().getConnection();
                            PreparedStatement ps = c.prepareStatement(
                                    "SELECT retries FROM coop.run WHERE parent_id = ?")) {
                        ps.setObject(1, parentRun);
                        try (ResultSet rs = ps.executeQuery()) {
                            return rs.next() && rs.getInt(1) > 0;
                        }
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
                holder.rollback();
            }
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.events(id)).noneMatch(e -> e.type() == EventType.ROLLING_BACK);
        }
    }

    @Test
    void a_lock_timeout_on_the_users_own_statement_fails_the_step() throws Exception {
        Topic<Empty> topic = Topic.of("impatient-user", Empty.class);
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE contended (id int PRIMARY KEY)");
            st.execute("INSERT INTO contended VALUES (1)");
        }
        Saga<Empty> saga = Saga.on(topic, "impatient-user").step("update", step -> {
            try (Statement st = step.connection().createStatement()) {
                st.execute("UPDATE contended SET id = 1 WHERE id = 1");
            }
        }).build();
        try (HikariDataSource pool = impatientPool();
                CoopEngine engine = Coop.engine(pool).register(saga).workers(2).start();
                Connection holder = db.dataSource().getConnection()) {
            holder.setAutoCommit(false);
            try (Statement st = holder.createStatement()) {
                st.execute("SELECT * FROM contended FOR UPDATE");
            }
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(dev.coop.render.Renderers.text().render(engine.client().tree(id)))
                    .contains("lock timeout");
            holder.rollback();
        }
    }
}
