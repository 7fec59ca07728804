package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.EventLog;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Each step is one transaction: business writes on step.connection() commit or roll back with the step. */
class StepTransactionTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final ObjectMapper JSON = new ObjectMapper();

    record Call(String method) {
    }

    @BeforeAll
    static void createBusinessTable(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE ledger (entry text PRIMARY KEY)");
        }
    }

    @Test
    void business_writes_of_a_step_commit_with_it(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("business-write", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "business-write-handler")
                .step("write", step -> insert(step.connection(), "written-by-" + step.runId()))
                .step("read-back", step -> {
                    // the previous step committed: its row is there for the next one
                    if (!exists(step.connection(), "written-by-" + step.runId())) {
                        throw new IllegalStateException("the previous step's write is missing");
                    }
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            java.util.UUID runId = engine.client().events(id).get(1).lineage().last();
            try (Connection c = dataSource.getConnection()) {
                assertThat(exists(c, "written-by-" + runId)).isTrue();
            }
        }
    }

    @Test
    void a_step_that_throws_leaves_neither_its_writes_nor_its_messages_behind(DataSource dataSource)
            throws SQLException {
        Topic<Empty> topic = Topic.of("failed-write", Empty.class);
        Topic<Empty> childTopic = Topic.of("failed-write-child", Empty.class);
        List<MessageId> launched = new CopyOnWriteArrayList<>();
        List<String> childRuns = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "failed-write-handler")
                .step("ok", step -> insert(step.connection(), "kept-" + step.runId()))
                .step("write-launch-throw", step -> {
                    insert(step.connection(), "lost-" + step.runId());
                    launched.add(step.launch(childTopic, new Empty()));
                    launched.add(step.launchOnGlobalScope(childTopic, new Empty()));
                    throw new IllegalStateException("business rule violated after writing");
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "failed-write-child-handler")
                .step("handle", step -> childRuns.add(step.messageId().toString()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga, child).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);

            List<Event> events = client.events(id);
            assertThat(EventLog.rows(events.subList(0, 4))).containsExactly(
                    "EMITTED - -",
                    "SEEN failed-write-handler -",
                    "SUSPENDED failed-write-handler ok",
                    "ROLLING_BACK failed-write-handler write-launch-throw");
            assertThat(events.getLast().type()).isEqualTo(EventType.ROLLED_BACK);
            assertThat(events).filteredOn(e -> e.type() == EventType.EMITTED).hasSize(1);
            java.util.UUID runId = events.get(1).lineage().last();
            try (Connection c = dataSource.getConnection()) {
                assertThat(exists(c, "kept-" + runId)).as("the write of the step that committed").isTrue();
                assertThat(exists(c, "lost-" + runId)).as("the write of the step that threw").isFalse();
            }
            assertThat(launched).hasSize(2);
            CoopTables tables = CoopTables.of(dataSource);
            for (MessageId message : launched) {
                assertThat(tables.messageRows(message)).isZero();
                assertThat(tables.eventRows(message)).as("EMITTED rows of a message launched in a failed step")
                        .isZero();
                assertThat(tables.runRows(message)).isZero();
            }
            // the child saga is alive and handles what is really launched on its topic
            MessageId direct = client.launch(childTopic, new Empty());
            assertThat(client.awaitCompletion(direct, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(childRuns).containsExactly(direct.toString());
        }
    }

    @Test
    void a_step_must_not_end_or_detach_its_transaction(DataSource dataSource) throws Exception {
        Topic<Call> topic = Topic.of("forbidden-calls", Call.class);
        Saga<Call> saga = Saga.on(topic, "forbidden-calls-handler")
                .step("call", step -> {
                    Connection c = step.connection();
                    insert(c, "forbidden-" + step.payload().method() + "-" + step.runId());
                    switch (step.payload().method()) {
                        case "commit" -> c.commit();
                        case "rollback" -> c.rollback();
                        case "close" -> c.close();
                        case "setAutoCommit" -> c.setAutoCommit(true);
                        default -> throw new IllegalArgumentException(step.payload().method());
                    }
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            for (String method : List.of("commit", "rollback", "close", "setAutoCommit")) {
                MessageId id = engine.client().launch(topic, new Call(method));
                assertThat(engine.client().awaitCompletion(id, WAIT)).as(method).isEqualTo(Outcome.ROLLED_BACK);
                List<Event> events = engine.client().events(id);
                Event rollingBack = events.stream().filter(e -> e.type() == EventType.ROLLING_BACK).findFirst()
                        .orElseThrow();
                JsonNode failure = JSON.readTree(rollingBack.exception());
                assertThat(failure.get("type").asText()).isEqualTo(IllegalStateException.class.getName());
                assertThat(failure.get("message").asText())
                        .contains("must not call Connection." + method + "()")
                        .contains("Coop commits or rolls back the step's transaction");
                try (Connection c = dataSource.getConnection()) {
                    assertThat(exists(c, "forbidden-" + method + "-" + events.get(1).lineage().last()))
                            .as("write before %s()", method).isFalse();
                }
            }
        }
    }

    @Test
    void a_step_can_recover_from_a_failed_statement_with_a_savepoint(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("savepoint-recovery", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "savepoint-recovery-handler")
                .step("write-twice", step -> {
                    Connection c = step.connection();
                    String entry = "savepoint-" + step.runId();
                    insert(c, entry);
                    Savepoint savepoint = c.setSavepoint();
                    try {
                        insert(c, entry); // duplicate key
                    } catch (SQLException duplicate) {
                        c.rollback(savepoint);
                    }
                    insert(c, entry + "-after");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            java.util.UUID runId = engine.client().events(id).get(1).lineage().last();
            try (Connection c = dataSource.getConnection()) {
                assertThat(exists(c, "savepoint-" + runId)).isTrue();
                assertThat(exists(c, "savepoint-" + runId + "-after")).isTrue();
            }
        }
    }

    /**
     * Releasing a savepoint neither ends nor detaches the step's transaction (frameworks do it for nested
     * transactions, e.g. Spring's PROPAGATION_NESTED), so it must be allowed like setSavepoint and rollback(savepoint).
     */
    @Test
    void a_step_can_release_a_savepoint_it_set(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("savepoint-release", Empty.class);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Saga<Empty> saga = Saga.on(topic, "savepoint-release-handler")
                .step("nested", step -> {
                    Connection c = step.connection();
                    Savepoint savepoint = c.setSavepoint();
                    insert(c, "released-" + step.runId());
                    try {
                        c.releaseSavepoint(savepoint);
                    } catch (RuntimeException | SQLException e) {
                        thrown.set(e);
                        throw e;
                    }
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            Outcome outcome = engine.client().awaitCompletion(id, WAIT);
            assertThat(thrown.get()).as("what releaseSavepoint threw").isNull();
            assertThat(outcome).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void the_step_connection_cannot_be_used_after_the_step_ended(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("connection-after-step", Empty.class);
        AtomicReference<Connection> kept = new AtomicReference<>();
        Saga<Empty> saga = Saga.on(topic, "connection-after-step-handler")
                .step("keep", step -> kept.set(step.connection()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> kept.get().createStatement())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("only be used while the step runs");
        }
    }

    /**
     * A step context kept beyond its step (handed to a callback, say) must refuse to launch: the message would be
     * collected into a list nobody reads any more, and silently never exist although launch returned its id.
     */
    @Test
    void launching_from_a_step_context_after_the_step_ended_is_refused(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("launch-after-step", Empty.class);
        AtomicReference<StepContext<Empty>> kept = new AtomicReference<>();
        Saga<Empty> saga = Saga.on(topic, "launch-after-step-handler")
                .step("keep", kept::set)
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            MessageId lost = null;
            try {
                lost = kept.get().launch(topic, new Empty());
            } catch (IllegalStateException expected) {
                assertThat(expected).hasMessageContaining("step");
            }
            assertThat(lost).as("the id of a message launched after its step ended, which will never exist")
                    .isNull();
        }
    }

    static void insert(Connection c, String entry) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO ledger (entry) VALUES (?)")) {
            ps.setString(1, entry);
            ps.executeUpdate();
        }
    }

    static boolean exists(Connection c, String entry) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM ledger WHERE entry = ?")) {
            ps.setString(1, entry);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }
}
