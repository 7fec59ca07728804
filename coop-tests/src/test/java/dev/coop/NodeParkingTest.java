package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.failure.Failure;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.ParkedRun;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Node.js participant parks runs as the protocol says (an advance, a {@code PARKED} event, the attempt log) and
 * goes on after an operator's answer: {@code participants/node/charge.js} runs saga {@code node-charge}, whose step
 * fails while the payment gateway is down, 5 attempts, then parked; {@code java-charge} is its Java twin, whose event
 * log Node's must equal. Skipped without node (failed on CI), as {@link NodeParticipantTest} is.
 */
class NodeParkingTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = NodeProcess.WAIT;

    record Charge(String order) {
    }

    static final Topic<Charge> CHARGE = Topic.of("charge-requested", Charge.class); // Node's
    static final Topic<Charge> CHARGE_TWIN = Topic.of("charge-requested-twin", Charge.class);

    static final class GatewayDownException extends RuntimeException {
        GatewayDownException(String message) {
            super(message);
        }
    }

    /** participants/node/charge.js, in Java. */
    static final Saga<Charge> JAVA_CHARGE = Saga.on(CHARGE_TWIN, "java-charge")
            .step("charge", step -> {
                String order = step.payload().order();
                if (ledger(order).contains("contended") && !ledger(order).contains("calm")) {
                    try (var s = step.connection().createStatement()) {
                        s.execute("DO $$ BEGIN RAISE EXCEPTION 'deadlock detected (a test)' USING ERRCODE = '40P01';"
                                + " END $$");
                    }
                }
                if (!ledger(order).contains("gateway up")) {
                    throw new GatewayDownException("The payment gateway is down (order " + order + ", attempt "
                            + step.attempt() + ")");
                }
                try (PreparedStatement ps = step.connection()
                        .prepareStatement("INSERT INTO charge_ledger (order_id, entry) VALUES (?, 'charged')")) {
                    ps.setString(1, order);
                    ps.executeUpdate();
                }
            })
            .retry(RetryPolicy.attempts(5).initialDelay(Duration.ZERO).parkWhenExhausted())
            .build();

    static final Topic<Charge> REFUND = Topic.of("refund-requested", Charge.class); // Node's
    static final Topic<Charge> REFUND_TWIN = Topic.of("refund-requested-twin", Charge.class);

    /** The refund saga of participants/node/charge.js, in Java: always fails, 6 attempts, then rolls back. */
    static final Saga<Charge> JAVA_REFUND = Saga.on(REFUND_TWIN, "java-refund")
            .step("refund", step -> {
                throw new GatewayDownException("The refund gateway is down (order " + step.payload().order()
                        + ", attempt " + step.attempt() + ")");
            })
            .retry(RetryPolicy.attempts(6).initialDelay(Duration.ZERO))
            .build();

    static CoopEngine engine;
    static Process node;
    static final List<String> nodeOutput = NodeProcess.output();

    @BeforeAll
    static void start() throws Exception {
        if (NodeProcess.MISSING != null) {
            return;
        }
        try (Connection c = db.dataSource().getConnection(); var s = c.createStatement()) {
            s.execute("CREATE TABLE charge_ledger (seq bigserial PRIMARY KEY, order_id text NOT NULL,"
                    + " entry text NOT NULL)");
        }
        engine = Coop.engine(db.dataSource()).register(JAVA_CHARGE, JAVA_REFUND).start();
        node = NodeProcess.start(db, "charge.js", nodeOutput);
    }

    @BeforeEach
    void participantInstalled() {
        NodeProcess.assumeInstalled();
    }

    @AfterAll
    static void stop() throws InterruptedException {
        NodeProcess.stop(node);
        if (engine != null) {
            engine.close();
        }
    }

    @Test
    void a_node_step_whose_retries_run_out_parks_its_run_as_a_java_run_and_goes_on_when_retried() throws Exception {
        CoopClient client = engine.client();
        MessageId id = client.launch(CHARGE, new Charge("c-1"));
        MessageId twin = client.launch(CHARGE_TWIN, new Charge("t-1"));

        ParkedRun parked = awaitParked(client, id);
        assertThat(parked.saga()).isEqualTo("node-charge");
        assertThat(parked.step()).isEqualTo("charge");
        assertThat(parked.attempt()).isEqualTo(5);
        assertThat(parked.failure().type()).isEqualTo("GatewayDownError");
        assertThat(parked.failure().message()).isEqualTo("The payment gateway is down (order c-1, attempt 5)");
        assertThat(client.tree(id).runs().getFirst().status()).isEqualTo(RunStatus.PARKED);
        List<Event> events = client.events(id);
        Invariants.assertAll(events);
        // attempts 1 to 3 each, the 4th when the series closes, then PARKED at the 5th: all by Node, in Node's words
        List<Event> attempts = events.stream()
                .filter(e -> e.type() == EventType.ATTEMPT_FAILED || e.type() == EventType.PARKED).toList();
        assertThat(attempts).extracting(Event::attempt).containsExactly(1, 2, 3, 4, 5);
        assertThat(attempts).allSatisfy(e -> assertThat(e.engine()).startsWith("node-"));
        assertThat(attempts).extracting(e -> Failure.fromJson(e.exception()).message()).containsExactly(
                "The payment gateway is down (order c-1, attempt 1)", "The payment gateway is down (order c-1,"
                        + " attempt 2)",
                "The payment gateway is down (order c-1, attempt 3)",
                "The payment gateway is down (order c-1, attempt 4)",
                "The payment gateway is down (order c-1, attempt 5)");
        assertThat(attempts.getLast().startedAt()).isNotNull();
        assertThat(attempts.get(3).startedAt()).isNull(); // the one that closes a long series
        awaitParked(client, twin);
        assertSameLog(client, id, twin);

        // the operator fixes the gateway and retries: the step runs again, from attempt 1, and commits
        ledger("c-1", "gateway up");
        ledger("t-1", "gateway up");
        assertThat(client.retryNow(parked.runId())).isTrue();
        assertThat(client.retryNow(awaitParked(client, twin).runId())).isTrue();
        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.COMMITTED);
        assertThat(client.awaitCompletion(twin, WAIT)).isEqualTo(Outcome.COMMITTED);
        assertThat(ledger("c-1")).containsExactly("gateway up", "charged");
        // RETRIED names the run's next_step, which a run parked at its first step has not got yet (Java's alike)
        assertThat(EventLog.rows(client.events(id))).endsWith("PARKED node-charge charge",
                "RETRIED node-charge -", "SUSPENDED node-charge charge", "COMMITTED node-charge charge");
        Invariants.assertAll(client.events(id));
        assertSameLog(client, id, twin);
    }

    @Test
    void a_node_step_whose_retries_run_out_without_parking_rolls_back_with_the_attempt_log_of_a_java_run() {
        CoopClient client = engine.client();
        MessageId id = client.launch(REFUND, new Charge("r-1"));
        MessageId twin = client.launch(REFUND_TWIN, new Charge("r-2"));

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(client.awaitCompletion(twin, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        List<Event> events = client.events(id);
        // attempts 1 to 3, then the 5th closing the series before the rollback; the 6th is the rollback's cause
        assertThat(events).filteredOn(e -> e.type() == EventType.ATTEMPT_FAILED).extracting(Event::attempt)
                .containsExactly(1, 2, 3, 5);
        assertThat(Failure.fromJson(events.stream().filter(e -> e.type() == EventType.ROLLING_BACK).findFirst()
                .orElseThrow().exception()).message()).isEqualTo("The refund gateway is down (order r-1, attempt 6)");
        Invariants.assertAll(events);
        assertSameLog(client, id, twin);
    }

    @Test
    void a_parked_node_step_marked_done_by_an_operator_counts_as_executed_without_running() throws Exception {
        CoopClient client = engine.client();
        MessageId id = client.launch(CHARGE, new Charge("c-2"));

        assertThat(client.markStepDone(awaitParked(client, id).runId())).isTrue();

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.COMMITTED);
        assertThat(ledger("c-2")).isEmpty(); // the step did not run again
        assertThat(EventLog.rows(client.events(id))).endsWith("PARKED node-charge charge",
                "MARKED_DONE node-charge -", "SUSPENDED node-charge charge", "COMMITTED node-charge charge");
        Invariants.assertAll(client.events(id));
    }

    /**
     * A deadlock (SQLSTATE 40P01) raised by the step's own statement is database trouble, as in Java: the step's
     * writes are undone and the run retried later (run.retries), its retry policy not asked, no attempt counted or
     * logged, nothing rolled back; once the contention is gone the step commits, and the log is the Java twin's.
     */
    @Test
    void a_deadlock_in_a_node_steps_own_statement_is_retried_later_as_database_trouble_as_in_java() throws Exception {
        CoopClient client = engine.client();
        for (String order : List.of("d-1", "d-2")) {
            ledger(order, "gateway up");
            ledger(order, "contended");
        }
        MessageId id = client.launch(CHARGE, new Charge("d-1"));
        MessageId twin = client.launch(CHARGE_TWIN, new Charge("d-2"));

        Await.until("both runs met the deadlock twice (or moved otherwise)", WAIT,
                () -> !runState(id).equals("RUNNABLE attempt 1") && !runState(twin).equals("RUNNABLE attempt 1"));
        assertThat(runState(id)).as(nodeOutput::toString).isEqualTo("RUNNABLE attempt 1 retried");
        assertThat(runState(twin)).isEqualTo("RUNNABLE attempt 1 retried");
        assertThat(EventLog.rows(client.events(id))).containsExactly("EMITTED - -", "SEEN node-charge -");

        ledger("d-1", "calm");
        ledger("d-2", "calm");
        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.COMMITTED);
        assertThat(client.awaitCompletion(twin, WAIT)).isEqualTo(Outcome.COMMITTED);
        assertThat(ledger("d-1")).containsExactly("gateway up", "contended", "calm", "charged");
        Invariants.assertAll(client.events(id));
        assertSameLog(client, id, twin);
    }

    /** The run's status and attempt, and "retried" once it met database trouble twice in a row. */
    private static String runState(MessageId id) {
        try (Connection c = db.dataSource().getConnection();
                var ps = c.prepareStatement("SELECT status || ' attempt ' || attempt || CASE WHEN retries >= 2"
                        + " THEN ' retried' ELSE '' END FROM coop.run WHERE message_id = ?")) {
            ps.setObject(1, id.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : "none";
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void a_node_run_that_meets_database_trouble_too_often_in_a_row_is_parked_with_a_parked_event() throws Exception {
        CoopClient client = engine.client();
        try (Connection c = db.dataSource().getConnection(); var s = c.createStatement()) {
            // Node's own statements fail for the messages listed here: its advance's events are refused
            s.execute("""
                    CREATE TABLE public.troubled (message_id uuid PRIMARY KEY);
                    CREATE FUNCTION public.refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                      IF NEW.type = 'SUSPENDED' AND EXISTS (SELECT 1 FROM public.troubled t
                                                             WHERE t.message_id = NEW.message_id) THEN
                        RAISE EXCEPTION 'the disk is full (a test)' USING ERRCODE = '53100';
                      END IF;
                      RETURN NEW;
                    END $$;
                    CREATE TRIGGER refuse_event BEFORE INSERT ON coop.event
                      FOR EACH ROW EXECUTE FUNCTION public.refuse_event();
                    """);
        }
        ledger("c-3", "gateway up");
        MessageId id;
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            id = client.launch(c, CHARGE, new Charge("c-3"));
            update(c, "INSERT INTO public.troubled VALUES (?)", id);
            // the run met trouble 999 times in a row already: the next one parks it
            update(c, "UPDATE coop.run SET retries = 999 WHERE message_id = ?", id);
            c.commit();
        }

        ParkedRun parked = awaitParked(client, id);
        assertThat(parked.failure().type()).isEqualTo("dev.coop.DatabaseTrouble");
        assertThat(parked.failure().message()).startsWith("Database trouble on 1000 attempts in a row at 'charge'");
        assertThat(parked.failure().causes().getFirst().message()).isEqualTo("the disk is full (a test)");
        Event event = client.events(id).getLast();
        assertThat(EventLog.row(event)).isEqualTo("PARKED node-charge charge");
        assertThat(event.attempt()).isEqualTo(1);
        assertThat(event.engine()).startsWith("node-");
        assertThat(ledger("c-3")).containsExactly("gateway up"); // the step's write went with its transaction

        update("DELETE FROM public.troubled WHERE message_id = ?", id);
        assertThat(client.retryNow(parked.runId())).isTrue();
        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.COMMITTED);
        assertThat(ledger("c-3")).containsExactly("gateway up", "charged");
        Invariants.assertAll(client.events(id));
    }

    @Test
    void a_node_run_whose_step_the_saga_no_longer_has_is_parked_with_a_parked_event() throws Exception {
        CoopClient client = engine.client();
        MessageId id;
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            id = client.launch(c, CHARGE, new Charge("c-4"));
            // as if a deploy renamed the step while the run waited
            update(c, "UPDATE coop.run SET next_step = 'authorise' WHERE message_id = ?", id);
            c.commit();
        }

        ParkedRun parked = awaitParked(client, id);
        assertThat(parked.failure().type()).isEqualTo("dev.coop.UnknownStep");
        assertThat(parked.failure().message()).startsWith("Saga 'node-charge' has no step 'authorise' at position 1");
        assertThat(EventLog.rows(client.events(id))).containsExactly("EMITTED - -", "SEEN node-charge -",
                "PARKED node-charge authorise");
        assertThat(client.events(id).getLast().attempt()).isEqualTo(1);
        assertThat(ledger("c-4")).isEmpty();
        Invariants.assertAll(client.events(id));
    }

    private static ParkedRun awaitParked(CoopClient client, MessageId id) {
        Await.until("message " + id + " has a parked run (Node: " + nodeOutput + ")", WAIT,
                () -> client.parkedRuns(1000).stream().anyMatch(p -> p.messageId().equals(id)));
        return client.parkedRuns(1000).stream().filter(p -> p.messageId().equals(id)).findFirst().orElseThrow();
    }

    /** Node's log and its Java twin's, row for row, with the attempts. */
    private static void assertSameLog(CoopClient client, MessageId node, MessageId java) {
        List<String> javaRows = client.events(java).stream()
                .map(e -> EventLog.row(e).replace("java-", "node-") + " " + e.attempt()).toList();
        assertThat(client.events(node).stream().map(e -> EventLog.row(e) + " " + e.attempt()).toList())
                .containsExactlyElementsOf(javaRows);
    }

    private static void update(Connection c, String sql, MessageId id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setObject(1, id.value());
            ps.executeUpdate();
        }
    }

    private static void update(String sql, MessageId id) throws SQLException {
        try (Connection c = db.dataSource().getConnection()) {
            update(c, sql, id);
        }
    }

    private static void ledger(String order, String entry) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                var ps = c.prepareStatement("INSERT INTO charge_ledger (order_id, entry) VALUES (?, ?)")) {
            ps.setString(1, order);
            ps.setString(2, entry);
            ps.executeUpdate();
        }
    }

    private static List<String> ledger(String order) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                var ps = c.prepareStatement("SELECT entry FROM charge_ledger WHERE order_id = ? ORDER BY seq")) {
            ps.setString(1, order);
            List<String> entries = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    entries.add(rs.getString(1));
                }
            }
            return entries;
        }
    }
}
