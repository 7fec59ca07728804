package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.render.Renderers;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A step (or compensation, child-failure handler, finally part) cannot end or split the transaction Coop commits for
 * it: SQL that would (COMMIT, END, ROLLBACK, ABORT, PREPARE TRANSACTION, ... by any statement method) is refused
 * before it is sent, the part fails and nothing it wrote is durable; and a route the guard cannot see (the driver's
 * own connection, unwrapped) is caught by the last line of defence: the part fails once and is never advanced.
 */
class StepEndsTransactionTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);
    static final Topic<String> STEP = Topic.of("ends-tx-step", String.class);
    static final Topic<String> COMPENSATION = Topic.of("ends-tx-compensation", String.class);
    static final Topic<String> HANDLER = Topic.of("ends-tx-handler", String.class);
    static final Topic<String> FINALLY = Topic.of("ends-tx-finally", String.class);
    static final Topic<Empty> FAILING_CHILD = Topic.of("ends-tx-failing-child", Empty.class);

    /** How a part ends its transaction, by name (the payload). */
    interface Route {
        void end(Connection c) throws Exception;
    }

    static final Map<String, Route> REFUSED = new LinkedHashMap<>();
    static final Map<String, Route> UNSEEN = new LinkedHashMap<>();
    /** Executions of each part, by payload. */
    static final Map<String, AtomicInteger> EXECUTIONS = new ConcurrentHashMap<>();

    static {
        REFUSED.put("execute", c -> c.createStatement().execute("COMMIT"));
        REFUSED.put("executeUpdate", c -> c.createStatement().executeUpdate("commit"));
        REFUSED.put("executeQuery", c -> c.createStatement().executeQuery("END"));
        REFUSED.put("executeLargeUpdate", c -> c.createStatement().executeLargeUpdate("ABORT"));
        REFUSED.put("comments", c -> c.createStatement().execute("/* why /* not */ */ -- now\n  rollBack"));
        REFUSED.put("multi", c -> c.createStatement().execute("SELECT 1; COMMIT AND CHAIN; SELECT 2"));
        REFUSED.put("prepareStatement", c -> c.prepareStatement("END WORK").execute());
        REFUSED.put("prepareCall", c -> c.prepareCall("PREPARE TRANSACTION 'coop-test'").execute());
        REFUSED.put("addBatch", c -> {
            Statement st = c.createStatement();
            st.addBatch("INSERT INTO written (what) VALUES ('batched')");
            st.addBatch("COMMIT");
            st.executeBatch();
        });
        REFUSED.put("nativeSQL", c -> c.createStatement().execute(c.nativeSQL("COMMIT")));
        REFUSED.put("statementConnection", c -> c.createStatement().getConnection().commit());
        REFUSED.put("caught", c -> { // swallowing the refusal does not save the step
            try (Statement st = c.createStatement()) {
                st.execute("COMMIT");
            } catch (SQLException ignored) {
                // a careless step
            }
        });
        REFUSED.put("caughtCommit", c -> {
            try {
                c.commit();
            } catch (IllegalStateException ignored) {
                // a careless step
            }
        });
        UNSEEN.put("rawCommit", c -> raw(c).commit());
        UNSEEN.put("rawRollback",
                c -> raw(c).rollback());
        UNSEEN.put("rawCommitThenThrow", c -> {
            raw(c).commit();
            throw new IllegalStateException("after a commit of its own");
        });
        UNSEEN.put("rawCommitThenDatabaseTrouble", c -> {
            raw(c).commit();
            throw new SQLException("could not serialize access", "40001");
        });
        UNSEEN.put("rawFirst", c -> {
        });
        UNSEEN.put("rawFirstThenThrow", c -> {
            throw new IllegalStateException("after a commit of its own");
        });
        UNSEEN.put("rawFirstThenDatabaseTrouble", c -> {
            throw new SQLException("could not serialize access", "40001");
        });
    }

    /** The driver's own connection under the step's: beyond what the guard sees. */
    private static Connection raw(Connection c) throws SQLException {
        return (Connection) c.unwrap(org.postgresql.PGConnection.class);
    }

    private static Route route(String payload) {
        String name = payload.substring(payload.indexOf(':') + 1);
        return REFUSED.containsKey(name) ? REFUSED.get(name) : UNSEEN.get(name);
    }

    /** Writes a row named after the part, then ends the transaction as the payload says. */
    private static void misbehave(StepContext<String> part, String where) throws Exception {
        EXECUTIONS.computeIfAbsent(part.payload() + "@" + where, k -> new AtomicInteger()).incrementAndGet();
        if (part.payload().contains(":rawFirst")) { // before the step touched its connection: no savepoint yet
            raw(part.connection()).commit();
        }
        try (var insert = part.connection().prepareStatement("INSERT INTO written (what) VALUES (?)")) {
            insert.setString(1, part.payload() + "@" + where);
            insert.executeUpdate();
        }
        route(part.payload()).end(part.connection());
    }

    static final Saga<String> STEPS = Saga.on(STEP, "ends-tx-step")
            .step("sneaky", step -> misbehave(step, "step")).retry(RetryPolicy.attempts(3))
            .step("after", step -> {
            }).build();
    static final Saga<String> COMPENSATIONS = Saga.on(COMPENSATION, "ends-tx-compensation")
            .step("done", step -> {
            }).compensateWith((step, cause) -> misbehave(step, "compensation"))
            .step("fails", step -> {
                throw new IllegalStateException("roll back, please");
            }).build();
    static final Saga<String> HANDLERS = Saga.on(HANDLER, "ends-tx-handler")
            .step("launch", step -> step.launch(FAILING_CHILD, new Empty()))
            .onChildFailure((step, failure) -> misbehave(step, "handler"))
            .step("after", step -> {
            }).build();
    static final Saga<String> FINALLY_PARTS = Saga.on(FINALLY, "ends-tx-finally")
            .step("work", step -> {
            }).andFinally(step -> misbehave(step, "finally"))
            .step("after", step -> {
            }).build();
    static final Saga<Empty> CHILD = Saga.on(FAILING_CHILD, "ends-tx-failing-child").step("fail", step -> {
        throw new IllegalStateException("child failed");
    }).build();

    @BeforeAll
    static void table() throws SQLException {
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE written (what text NOT NULL)");
        }
    }

    private static int rows(String what) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                var ps = c.prepareStatement("SELECT count(*) FROM written WHERE what = ?")) {
            ps.setString(1, what);
            try (var rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** No SUSPENDED of the misbehaving part: the step, the handler run or the finally part. */
    private static void assertNeverAdvanced(CoopClient client, MessageId id, String payload) {
        assertThat(client.events(id).stream().filter(e -> e.type() == EventType.SUSPENDED && e.step() != null
                && (e.step().equals("sneaky") || e.step().endsWith("(child failure handler)")
                        || e.step().endsWith("(finally)"))))
                .as(payload + ": never advanced").isEmpty();
    }

    private static int executions(String key) {
        AtomicInteger n = EXECUTIONS.get(key);
        return n == null ? 0 : n.get();
    }

    private static CoopEngine engine(int workers) {
        return Coop.engine(db.dataSource()).register(STEPS, COMPENSATIONS, HANDLERS, FINALLY_PARTS, CHILD)
                .workers(workers).start();
    }

    @Test
    void sql_that_ends_the_transaction_is_refused_on_every_route_and_nothing_of_the_part_is_durable()
            throws Exception {
        try (CoopEngine a = engine(2); CoopEngine b = engine(2)) {
            CoopClient client = a.client();
            for (String route : REFUSED.keySet()) {
                for (var part : Map.of(STEP, "step", HANDLER, "handler", FINALLY, "finally").entrySet()) {
                    String payload = part.getValue() + ":" + route;
                    MessageId id = client.launch(part.getKey(), payload);
                    assertThat(client.awaitCompletion(id, WAIT)).as(payload).isEqualTo(Outcome.ROLLED_BACK);
                    String key = payload + "@" + part.getValue();
                    assertThat(rows(key)).as(payload + ": nothing the part wrote is durable").isZero();
                    assertThat(rows("batched")).as(payload).isZero();
                    assertThat(executions(key)).as(payload + ": not retried, not run twice").isEqualTo(1);
                    assertThat(Renderers.text().render(client.tree(id))).as(payload)
                            .containsAnyOf("must not end its transaction", "must not call Connection.commit()");
                    assertNeverAdvanced(client, id, payload);
                }
                String payload = "compensation:" + route;
                MessageId id = client.launch(COMPENSATION, payload);
                assertThat(client.awaitCompletion(id, WAIT)).as(payload).isEqualTo(Outcome.ROLLBACK_FAILED);
                assertThat(rows(payload + "@compensation")).as(payload).isZero();
                assertThat(executions(payload + "@compensation")).as(payload).isEqualTo(1);
                assertThat(Renderers.text().render(client.tree(id))).as(payload)
                        .containsAnyOf("must not end its transaction", "must not call Connection.commit()");
            }
        }
    }

    @Test
    void a_part_that_ends_its_transaction_under_the_guard_fails_once_and_is_never_advanced() throws Exception {
        try (CoopEngine engine = engine(1)) { // one worker: nobody else claims the run its commit unlocked
            CoopClient client = engine.client();
            for (String route : UNSEEN.keySet()) {
                for (var part : Map.of(STEP, "step", HANDLER, "handler", FINALLY, "finally").entrySet()) {
                    String payload = part.getValue() + ":" + route;
                    MessageId id = client.launch(part.getKey(), payload);
                    assertThat(client.awaitCompletion(id, WAIT)).as(payload).isEqualTo(Outcome.ROLLED_BACK);
                    assertThat(executions(payload + "@" + part.getValue())).as(payload + ": ran once").isEqualTo(1);
                    assertNeverAdvanced(client, id, payload);
                    assertThat(Renderers.text().render(client.tree(id))).as(payload)
                            .contains("ended the transaction that claimed its run");
                    dev.coop.test.Invariants.assertRunsWellFormed(client.events(id));
                }
                String payload = "compensation:" + route;
                MessageId id = client.launch(COMPENSATION, payload);
                assertThat(client.awaitCompletion(id, WAIT)).as(payload).isEqualTo(Outcome.ROLLBACK_FAILED);
                assertThat(executions(payload + "@compensation")).as(payload).isEqualTo(1);
            }
        }
    }

    @Test
    void a_statement_kept_after_its_step_ended_cannot_run_in_the_next_transaction() throws Exception {
        Topic<Empty> topic = Topic.of("ends-tx-leak", Empty.class);
        AtomicReference<Statement> kept = new AtomicReference<>();
        Saga<Empty> leaking = Saga.on(topic, "ends-tx-leak").step("keep", step -> {
            kept.set(step.connection().createStatement());
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(leaking).workers(1).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThatThrownBy(() -> kept.get().execute("INSERT INTO written (what) VALUES ('late')"))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("only be used while the step runs");
            assertThat(rows("late")).isZero();
        }
    }
}
