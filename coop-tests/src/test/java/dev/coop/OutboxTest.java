package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Order;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.StepRecorder;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Launching inside the caller's transaction: the message exists, and runs, exactly when the caller commits. */
class OutboxTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @BeforeAll
    static void createBusinessTable(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE customer_order (id text PRIMARY KEY, amount int NOT NULL)");
        }
    }

    @Test
    void a_message_launched_in_a_rolled_back_transaction_leaves_no_trace(DataSource dataSource)
            throws SQLException {
        Topic<Order> topic = Topic.of("outbox-rolled-back", Order.class);
        StepRecorder recorder = new StepRecorder();
        List<String> handled = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "outbox-rolled-back-handler")
                .step("handle", step -> {
                    recorder.record(step);
                    handled.add(step.payload().id());
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId rolledBack;
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                insertOrder(c, "rolled-back-order", 10);
                rolledBack = client.launch(c, topic, new Order("rolled-back-order", 10));
                c.rollback();
                c.setAutoCommit(true);
            }

            assertThatThrownBy(() -> client.statuses(rolledBack))
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("No message " + rolledBack);
            assertThatThrownBy(() -> client.awaitCompletion(rolledBack, WAIT))
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("No message " + rolledBack);
            CoopTables tables = CoopTables.of(dataSource);
            assertThat(tables.messageRows(rolledBack)).isZero();
            assertThat(tables.eventRows(rolledBack)).isZero();
            assertThat(tables.runRows(rolledBack)).isZero();
            assertThat(orderExists(dataSource, "rolled-back-order")).isFalse();

            // a committed launch after it runs, and is the only one that ever ran
            MessageId committed;
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                committed = client.launch(c, topic, new Order("committed-after", 11));
                c.commit();
                c.setAutoCommit(true);
            }
            assertThat(client.awaitCompletion(committed, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(handled).containsExactly("committed-after");
            assertThat(recorder.total()).isEqualTo(1);
        }
    }

    @Test
    void a_message_launched_in_a_committed_transaction_runs_and_sees_the_callers_writes(DataSource dataSource)
            throws SQLException {
        Topic<Order> topic = Topic.of("outbox-committed", Order.class);
        List<Integer> amountsSeenByStep = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "outbox-committed-handler")
                .step("read-order", step -> {
                    try (PreparedStatement ps = step.connection()
                            .prepareStatement("SELECT amount FROM customer_order WHERE id = ?")) {
                        ps.setString(1, step.payload().id());
                        try (ResultSet rs = ps.executeQuery()) {
                            amountsSeenByStep.add(rs.next() ? rs.getInt(1) : -1);
                        }
                    }
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id;
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                insertOrder(c, "committed-order", 42);
                id = client.launch(c, topic, new Order("committed-order", 42));
                // not visible to anyone before the caller commits
                assertThatThrownBy(() -> client.statuses(id)).isInstanceOf(CoopValidationException.class);
                c.commit();
                c.setAutoCommit(true);
            }
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(amountsSeenByStep).containsExactly(42);
        }
    }

    private static void insertOrder(Connection c, String id, int amount) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO customer_order (id, amount) VALUES (?, ?)")) {
            ps.setString(1, id);
            ps.setInt(2, amount);
            ps.executeUpdate();
        }
    }

    private static boolean orderExists(DataSource dataSource, String id) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT 1 FROM customer_order WHERE id = ?")) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }
}
