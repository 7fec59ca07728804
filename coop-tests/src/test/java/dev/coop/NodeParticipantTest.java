package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.failure.ChildRolledBackException;
import dev.coop.failure.Failure;
import dev.coop.inspect.Event;
import dev.coop.inspect.Outcome;
import dev.coop.join.JoinId;
import dev.coop.join.JoinResult;
import dev.coop.join.JoinSpec;
import dev.coop.join.JoinStatus;
import dev.coop.join.JoinView;
import dev.coop.render.Renderers;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A participant in another language: the Node.js example of {@code participants/node} (written from
 * docs/protocol.md) runs saga {@code node-fulfilment} between Java sagas. Java's {@code orders} launches the message
 * it handles, its {@code reserve} step launches one that Java's {@code stock} handles. Every scenario also runs with
 * {@code java-fulfilment}, the same saga in Java, and the two event logs must be the same, row for row.
 *
 * <p>
 * Runs when {@code node} and the participant's {@code node_modules} are installed ({@code .ci/run} installs them);
 * skipped otherwise, saying how, and failed on CI (see {@link NodeProcess}).
 */
class NodeParticipantTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = NodeProcess.WAIT;

    record Order(String order, int quantity, boolean declined) {
    }

    record Fulfilment(String order, int quantity) {
    }

    record StockChecked(String order) {
    }

    static final Topic<Order> ORDER_PLACED = Topic.of("order-placed", Order.class);
    static final Topic<Order> ORDER_PLACED_TWIN = Topic.of("order-placed-twin", Order.class);
    static final Topic<Fulfilment> FULFILMENT = Topic.of("fulfilment-requested", Fulfilment.class); // Node's
    static final Topic<Fulfilment> FULFILMENT_TWIN = Topic.of("fulfilment-requested-twin", Fulfilment.class);
    static final Topic<StockChecked> STOCK_CHECKED = Topic.of("stock-checked", StockChecked.class);

    /** The root saga, in Java: asks for fulfilment, then records how its children had ended; may fail then. */
    static Saga<Order> orders(String name, Topic<Order> topic, Topic<Fulfilment> fulfilment) {
        return Saga.on(topic, name)
                .step("request-fulfilment",
                        step -> step.launch(fulfilment, new Fulfilment(step.payload().order(),
                                step.payload().quantity())))
                .compensateWith((step, cause) -> undo(step.connection(), name, step.payload().order(),
                        cause.failure().message()))
                .step("record-fulfilment", step -> {
                    ledger(step.connection(), step.payload().order(),
                            "orders saw children " + children(step.connection(), step.runId()));
                    if (step.payload().declined()) {
                        throw new IllegalStateException("Payment declined for order " + step.payload().order());
                    }
                })
                .build();
    }

    static final Topic<JoinResult> FULFILLED = Topic.of("fulfilment-joined", JoinResult.class);
    static final Topic<JoinResult> UNFULFILLED = Topic.of("fulfilment-join-failed", JoinResult.class);

    /** Reads the outcome message of a join that a Node run settled. */
    static final Saga<JoinResult> JOINED = Saga.on(FULFILLED, "joined")
            .step("record", step -> ledger(step.connection(), step.payload().key(), "join "
                    + step.payload().status() + ": " + step.payload().members().getFirst().messageId() + " "
                    + step.payload().members().getFirst().state()))
            .build();

    /** Gates that hold the stock check of an order, by order. */
    static final Map<String, StepGate> HELD = new ConcurrentHashMap<>();

    /** Gates that hold the compensation of an order's stock check, by order. */
    static final Map<String, StepGate> HELD_UNDO = new ConcurrentHashMap<>();

    static final Saga<StockChecked> STOCK = Saga.on(STOCK_CHECKED, "stock")
            .step("check", step -> {
                StepGate gate = HELD.get(step.payload().order());
                if (gate != null) {
                    gate.pass();
                }
                ledger(step.connection(), step.payload().order(), "stock checked");
            })
            .compensateWith((step, cause) -> {
                StepGate gate = HELD_UNDO.get(step.payload().order());
                if (gate != null) {
                    gate.pass();
                }
                undo(step.connection(), "stock", step.payload().order(), cause.failure().message());
            })
            .build();

    static final class OutOfStockException extends RuntimeException {
        OutOfStockException(String message) {
            super(message);
        }
    }

    /** participants/node/fulfilment.js, in Java: the twin whose event log Node's must equal. */
    static final Saga<Fulfilment> JAVA_FULFILMENT = Saga.on(FULFILMENT_TWIN, "java-fulfilment")
            .step("reserve", step -> {
                ledger(step.connection(), step.payload().order(), "reserved");
                if (step.payload().quantity() > 10) {
                    throw new OutOfStockException("Only 10 left of what order " + step.payload().order()
                            + " wants " + step.payload().quantity() + " of");
                }
                step.launch(STOCK_CHECKED, new StockChecked(step.payload().order()));
            })
            .compensateWith((step, cause) -> {
                String order = step.payload().order();
                if (order.startsWith("contended-") && !ledger(order).contains("calm")) {
                    try (var s = step.connection().createStatement()) {
                        s.execute("DO $$ BEGIN RAISE EXCEPTION 'deadlock detected (a test)' USING ERRCODE = '40P01';"
                                + " END $$");
                    }
                }
                if (step.payload().order().startsWith("lost-")) {
                    throw new IllegalStateException("The warehouse lost the reservation of order "
                            + step.payload().order());
                }
                undo(step.connection(), "java-fulfilment", step.payload().order(), cause.failure().message());
            })
            .step("confirm", step -> ledger(step.connection(), step.payload().order(),
                    "confirmed after children " + children(step.connection(), step.runId())))
            .build();

    static CoopEngine engine;
    static Process node;
    static final List<String> nodeOutput = NodeProcess.output();

    @BeforeAll
    static void start() throws Exception {
        if (NodeProcess.MISSING != null) {
            return; // each test is skipped (on CI: fails) saying why
        }
        DataSource dataSource = db.dataSource();
        try (Connection c = dataSource.getConnection(); var s = c.createStatement()) {
            s.execute("CREATE TABLE fulfilment_ledger (seq bigserial PRIMARY KEY, order_id text NOT NULL,"
                    + " entry text NOT NULL)");
            s.execute("CREATE TABLE fulfilment_undo (seq bigserial PRIMARY KEY, who text NOT NULL,"
                    + " order_id text NOT NULL, why text NOT NULL)");
        }
        engine = Coop.engine(dataSource)
                .register(orders("orders", ORDER_PLACED, FULFILMENT), orders("orders-twin", ORDER_PLACED_TWIN,
                        FULFILMENT_TWIN), STOCK, JAVA_FULFILMENT, JOINED)
                .start(); // creates the schema the participant works in
        node = NodeProcess.start(db, "fulfilment.js", nodeOutput);
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
    void java_and_node_steps_wait_for_each_other_across_the_languages() throws SQLException {
        CoopClient client = engine.client();
        MessageId id = client.launch(ORDER_PLACED, new Order("o-1", 2, false));

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.COMMITTED);
        // each step saw the runs of the previous step finished when it started: Node's confirm its Java child,
        // Java's record-fulfilment the Node run
        assertThat(ledger("o-1")).containsExactly("reserved", "stock checked", "confirmed after children COMMITTED",
                "orders saw children COMMITTED");
        List<Event> events = client.events(id);
        Invariants.assertAll(events); // the step barrier, read from the log: no step started before its children
        assertThat(EventLog.rows(events)).contains("SUSPENDED node-fulfilment reserve",
                "COMMITTED node-fulfilment confirm");
        assertThat(events).filteredOn(e -> "node-fulfilment".equals(e.saga()))
                .allSatisfy(e -> assertThat(e.engine()).startsWith("node-"));
        assertSameLogAsJavaTwin(client, id, new Order("t-1", 2, false), Outcome.COMMITTED);
    }

    @Test
    void a_node_step_failure_reaches_the_java_parent_as_a_distributed_exception() throws SQLException {
        CoopClient client = engine.client();
        MessageId id = client.launch(ORDER_PLACED, new Order("o-2", 11, false));

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLED_BACK);
        Failure failure = client.results(id).getFirst().failure().orElseThrow();
        assertThat(failure.type()).isEqualTo(ChildRolledBackException.TYPE);
        Failure fromNode = failure.causes().getFirst();
        assertThat(fromNode.type()).isEqualTo("OutOfStockError");
        assertThat(fromNode.message()).isEqualTo("Only 10 left of what order o-2 wants 11 of");
        assertThat(fromNode.source()).startsWith("node-fulfilment[node-");
        assertThat(fromNode.stackTrace().getFirst().fileName()).isEqualTo("fulfilment.js");
        assertThat(fromNode.stackTrace().getFirst().functionName()).isEqualTo("reserve");
        assertThat(failure.render()).contains("OutOfStockError: Only 10 left of what order o-2 wants 11 of",
                "reserve(fulfilment.js:");
        assertThat(Renderers.text().render(client.tree(id))).contains("node-fulfilment",
                "OutOfStockError: Only 10 left of what order o-2 wants 11 of");
        // the failing step's writes are undone; nothing of Node's had completed, so only orders compensates
        assertThat(ledger("o-2")).isEmpty();
        assertThat(undone("o-2")).containsExactly("orders");
        assertSameLogAsJavaTwin(client, id, new Order("t-2", 11, false), Outcome.ROLLED_BACK);
    }

    @Test
    void a_later_java_failure_compensates_the_node_run_children_first() throws SQLException {
        CoopClient client = engine.client();
        MessageId id = client.launch(ORDER_PLACED, new Order("o-3", 2, true));

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(client.results(id).getFirst().failure().orElseThrow().message())
                .isEqualTo("Payment declined for order o-3");
        // children first: Node's Java child, then Node's own compensation, then the Java root's
        assertThat(undone("o-3")).containsExactly("stock", "node-fulfilment", "orders");
        assertThat(undoReasons("o-3")).containsExactly("node-fulfilment is rolling back", "orders is rolling back",
                "Payment declined for order o-3");
        List<Event> events = client.events(id);
        Invariants.assertAll(events);
        assertThat(EventLog.rows(events)).containsSubsequence("ROLLBACK_EMITTED orders Rollback of request-fulfilment"
                + " (rolling back child scopes)", "ROLLING_BACK node-fulfilment -",
                "ROLLBACK_EMITTED node-fulfilment Rollback of reserve (rolling back child scopes)",
                "ROLLED_BACK stock Rollback of check", "SUSPENDED node-fulfilment Rollback of reserve",
                "ROLLED_BACK node-fulfilment Rollback of reserve", "ROLLED_BACK orders Rollback of request-fulfilment");
        assertSameLogAsJavaTwin(client, id, new Order("t-3", 2, true), Outcome.ROLLED_BACK);
    }

    @Test
    void a_failing_node_compensation_ends_the_hierarchy_rollback_failed() throws SQLException {
        CoopClient client = engine.client();
        MessageId id = client.launch(ORDER_PLACED, new Order("lost-7", 2, true));

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLBACK_FAILED);
        Failure failure = client.results(id).getFirst().failure().orElseThrow();
        assertThat(failure.type()).isEqualTo("dev.coop.failure.ChildRollbackFailedException");
        Failure fromNode = failure.causes().getFirst();
        assertThat(fromNode.type()).isEqualTo("Error");
        assertThat(fromNode.message()).isEqualTo("The warehouse lost the reservation of order lost-7");
        assertThat(fromNode.stackTrace().getFirst().functionName()).isEqualTo("undoReserve");
        assertThat(fromNode.causes().getLast().type()).isEqualTo("dev.coop.failure.ParentSaidSoException");
        assertThat(Renderers.text().render(client.tree(id)))
                .contains("The warehouse lost the reservation of order lost-7");
        // the Java child below was undone; Node's compensation wrote nothing; the Java root could not be undone
        assertThat(undone("lost-7")).containsExactly("stock");
        assertSameLogAsJavaTwin(client, id, new Order("lost-8", 2, true), Outcome.ROLLBACK_FAILED);
    }

    @Test
    void a_deadlock_in_a_node_compensation_is_retried_later_as_database_trouble_as_in_java() throws SQLException {
        CoopClient client = engine.client();
        MessageId id = client.launch(ORDER_PLACED, new Order("contended-1", 2, true));
        MessageId twin = client.launch(ORDER_PLACED_TWIN, new Order("contended-2", 2, true));

        // the compensation's writes are undone and the run retried later, neither failing the rollback nor counted
        String retriedOrEnded = ".* retried|(ROLLED_BACK|ROLLBACK_FAILED) .*"; // after the happy path committed
        Await.until("both compensations met the deadlock twice (or their rollbacks ended)", WAIT,
                () -> troubleState("node-fulfilment", id).matches(retriedOrEnded)
                        && troubleState("java-fulfilment", twin).matches(retriedOrEnded));
        assertThat(troubleState("node-fulfilment", id)).as(nodeOutput::toString)
                .isEqualTo("RUNNABLE ROLLBACK COMPENSATE retried");
        assertThat(troubleState("java-fulfilment", twin)).isEqualTo("RUNNABLE ROLLBACK COMPENSATE retried");
        assertThat(undone("contended-1")).containsExactly("stock");
        ledger(db.dataSource(), "contended-1", "calm");
        ledger(db.dataSource(), "contended-2", "calm");

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(client.awaitCompletion(twin, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(undone("contended-1")).containsExactly("stock", "node-fulfilment", "orders");
        Invariants.assertAll(client.events(id));
        assertThat(EventLog.rows(client.events(id))).containsExactlyElementsOf(EventLog.rows(client.events(twin))
                .stream().map(row -> row.replace("orders-twin", "orders").replace("java-fulfilment",
                        "node-fulfilment"))
                .toList());
    }

    /** The status, phase and rollback stage of a run, and "retried" once it met database trouble twice in a row. */
    private static String troubleState(String saga, MessageId root) {
        return runValue("status || ' ' || phase || ' ' || coalesce(rollback_stage, '-')"
                + " || CASE WHEN retries >= 2 THEN ' retried' ELSE '' END", saga, root);
    }

    private static void ledger(DataSource dataSource, String order, String entry) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            ledger(c, order, entry);
        }
    }

    @Test
    void a_node_step_that_ends_its_transaction_fails_and_runs_once() throws SQLException {
        CoopClient client = engine.client();
        MessageId id = client.launch(ORDER_PLACED, new Order("rogue-1", 1, false));

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLED_BACK);
        Failure fromNode = client.results(id).getFirst().failure().orElseThrow().causes().getFirst();
        assertThat(fromNode.type()).isEqualTo("ClaimLostError");
        assertThat(fromNode.message()).startsWith("The step ended the transaction that claimed its run");
        // what it wrote before its COMMIT stays (as in Java), but the step never ran a second time
        assertThat(ledger("rogue-1")).containsExactly("reserved");
        assertThat(undone("rogue-1")).containsExactly("orders");
        Invariants.assertAll(client.events(id));
    }

    @Test
    void a_node_compensation_that_ends_its_transaction_fails_the_rollback_at_that_compensation() throws SQLException {
        CoopClient client = engine.client();
        MessageId id = client.launch(ORDER_PLACED, new Order("sly-1", 2, true));

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLBACK_FAILED);
        List<Event> events = client.events(id);
        Event failed = events.stream().filter(e -> "node-fulfilment".equals(e.saga())).toList().getLast();
        assertThat(EventLog.row(failed)).isEqualTo("ROLLBACK_FAILED node-fulfilment Rollback of reserve");
        Failure fromNode = Failure.fromJson(failed.exception());
        assertThat(fromNode.type()).isEqualTo("ClaimLostError");
        assertThat(fromNode.causes().getLast().type()).isEqualTo("dev.coop.failure.ParentSaidSoException");
        // what the compensation wrote before its COMMIT stays, as its own doing; the compensation never ran twice
        assertThat(undone("sly-1")).containsExactly("stock", "node-fulfilment");
        Invariants.assertAll(events);
    }

    @Test
    void a_cancelled_hierarchy_rolls_the_node_run_back() throws SQLException {
        CoopClient client = engine.client();
        MessageId id;
        try (Connection c = db.dataSource().getConnection(); var lock = c.createStatement()) {
            // hold Node's confirm back: it waits for this lock on its ledger row while the cancellation arrives
            c.setAutoCommit(false);
            lock.execute("LOCK TABLE fulfilment_ledger IN SHARE MODE");
            id = client.launch(ORDER_PLACED, new Order("o-4", 2, false));
            Await.until("Node's reserve step waits for the ledger", WAIT, () -> waitingForLock("fulfilment_ledger"));
            client.cancel(id, "customer withdrew");
            c.rollback();
        }
        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(Renderers.text().render(client.tree(id))).contains("customer withdrew");
        assertThat(ledger("o-4")).isEmpty();
        assertThat(undone("o-4")).containsExactly("orders");
        Invariants.assertAll(client.events(id));
    }

    @Test
    void a_node_run_woken_by_a_cancellation_while_its_child_runs_waits_for_it_then_gives_up() throws SQLException {
        CoopClient client = engine.client();
        MessageId id = cancelWhileTheChildRuns(client, ORDER_PLACED, "held-1", "node-fulfilment");

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLED_BACK);
        // the child's step ran but could not commit (its write is gone); Node's reserve and the Java root are undone
        assertThat(ledger("held-1")).containsExactly("reserved");
        assertThat(undone("held-1")).containsExactly("node-fulfilment", "orders");
        Invariants.assertAll(client.events(id));
        MessageId twin = cancelWhileTheChildRuns(client, ORDER_PLACED_TWIN, "held-2", "java-fulfilment");
        assertThat(client.awaitCompletion(twin, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(EventLog.rows(client.events(id))).containsExactlyElementsOf(EventLog.rows(client.events(twin))
                .stream().map(row -> row.replace("orders-twin", "orders").replace("java-fulfilment",
                        "node-fulfilment"))
                .toList());
    }

    /**
     * Launches an order whose stock check is held in its step, cancels the hierarchy, and lets the check go on once
     * the fulfilment run, woken by the cancellation, went back to waiting for it (the barrier re-check).
     */
    private static MessageId cancelWhileTheChildRuns(CoopClient client, Topic<Order> topic, String order,
            String fulfilment) throws SQLException {
        StepGate gate = new StepGate(WAIT);
        HELD.put(order, gate);
        MessageId id = client.launch(topic, new Order(order, 2, false));
        gate.awaitArrivals(1, WAIT);
        assertThat(runState(fulfilment, id)).isEqualTo("WAITING 1 -");
        int before = version(fulfilment, id);
        client.cancel(id, "customer withdrew"); // makes it RUNNABLE (its version unchanged); the participant may
        // re-check it at once, so the test awaits the re-check's outcome: WAITING again, with a new version
        Await.until(fulfilment + " waits again", WAIT,
                () -> runState(fulfilment, id).equals("WAITING 1 -") && version(fulfilment, id) > before);
        gate.open();
        return id;
    }

    @Test
    void a_node_run_rechecked_while_its_child_rolls_back_keeps_its_rollback_cause_as_a_java_run_does()
            throws SQLException {
        CoopClient client = engine.client();
        MessageId id = recheckWhileTheChildRollsBack(client, ORDER_PLACED, "orders", "undo-held-1",
                "node-fulfilment");

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(undone("undo-held-1")).containsExactly("stock", "node-fulfilment", "orders");
        Invariants.assertAll(client.events(id));
        MessageId twin = recheckWhileTheChildRollsBack(client, ORDER_PLACED_TWIN, "orders-twin", "undo-held-2",
                "java-fulfilment");
        assertThat(client.awaitCompletion(twin, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(EventLog.rows(client.events(id))).containsExactlyElementsOf(EventLog.rows(client.events(twin))
                .stream().map(row -> row.replace("orders-twin", "orders").replace("java-fulfilment",
                        "node-fulfilment"))
                .toList());
    }

    /**
     * Launches an order that fails after its fulfilment committed, holds the compensation of the stock check while
     * the fulfilment run waits for it on the rollback path, wakes that run as a strategy's barrier timer would (the
     * barrier re-check), and lets the compensation go on once the run waits again, its rollback cause still its
     * failure.
     */
    private static MessageId recheckWhileTheChildRollsBack(CoopClient client, Topic<Order> topic, String root,
            String order, String fulfilment) {
        StepGate gate = new StepGate(WAIT);
        HELD_UNDO.put(order, gate);
        MessageId id = client.launch(topic, new Order(order, 2, true));
        gate.awaitArrivals(1, WAIT);
        String waiting = "WAITING 1 " + root + " is rolling back (the rollback cause)";
        assertThat(rollbackState(fulfilment, id)).isEqualTo(waiting);
        try (Connection c = db.dataSource().getConnection();
                var ps = c.prepareStatement("UPDATE coop.run SET status = 'RUNNABLE', runnable_at = clock_timestamp()"
                        + " WHERE saga = ? AND lineage[1] = ?")) {
            ps.setString(1, fulfilment);
            ps.setObject(2, id.value());
            assertThat(ps.executeUpdate()).isEqualTo(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        Await.until(fulfilment + " waits again after the re-check", WAIT,
                () -> rollbackState(fulfilment, id).startsWith("WAITING "));
        assertThat(rollbackState(fulfilment, id)).as(nodeOutput::toString).isEqualTo(waiting);
        gate.open();
        return id;
    }

    /** The status, pending children and failure message of a run, and whether that failure is its rollback cause. */
    private static String rollbackState(String saga, MessageId root) {
        return runValue("status || ' ' || pending_children || ' ' || coalesce(failure->>'message', 'null')"
                + " || CASE WHEN failure = rollback_cause THEN ' (the rollback cause)' ELSE '' END", saga, root);
    }

    @Test
    void a_node_run_that_gives_up_at_its_deadline_rolls_back_like_a_java_run() {
        CoopClient client = engine.client();
        CooperationContext late = CooperationContext.of(Deadlines.HAPPY_PATH,
                Deadline.at(Instant.now().minusSeconds(60), "the warehouse"));
        MessageId id = client.launch(FULFILMENT, new Fulfilment("o-5", 1), late);

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.ROLLED_BACK);
        Failure gaveUp = client.results(id).getFirst().failure().orElseThrow();
        assertThat(gaveUp.type()).isEqualTo("dev.coop.failure.GaveUpException");
        assertThat(gaveUp.causes().getFirst().type()).isEqualTo("dev.coop.failure.HappyPathDeadlineMissedException");
        assertThat(gaveUp.causes().getFirst().message()).contains("set by the warehouse");
        MessageId twin = client.launch(FULFILMENT_TWIN, new Fulfilment("t-5", 1), late);
        assertThat(client.awaitCompletion(twin, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(client.results(twin).getFirst().failure().orElseThrow().causes().getFirst().type())
                .isEqualTo(gaveUp.causes().getFirst().type());
        assertThat(EventLog.rows(client.events(id))).containsExactlyElementsOf(EventLog.rows(client.events(twin))
                .stream().map(row -> row.replace("java-fulfilment", "node-fulfilment")).toList());
    }

    @Test
    void a_node_run_that_finishes_settles_its_join_and_publishes_the_outcome() throws SQLException {
        CoopClient client = engine.client();
        JoinId join = client.joins().start(JoinSpec.expecting(1).key("o-6").onComplete(FULFILLED).onFail(UNFULFILLED));
        MessageId id;
        try (Connection c = db.dataSource().getConnection()) { // the member is attached before any run starts
            c.setAutoCommit(false);
            id = client.launch(c, FULFILMENT, new Fulfilment("o-6", 1));
            client.joins().attach(c, join, id);
            c.commit();
        }

        assertThat(client.awaitCompletion(id, WAIT)).as(nodeOutput::toString).isEqualTo(Outcome.COMMITTED);
        JoinView view = client.joins().get(join);
        assertThat(view.status()).isEqualTo(JoinStatus.COMPLETED);
        assertThat(client.awaitCompletion(view.outcomeMessage(), WAIT)).isEqualTo(Outcome.COMMITTED);
        assertThat(ledger("o-6")).containsExactly("reserved", "stock checked", "confirmed after children COMMITTED",
                "join COMPLETED: " + id.value() + " COMPLETED");
    }

    @Test
    void a_node_saga_named_like_a_saga_of_another_topic_is_refused_and_writes_nothing() throws Exception {
        String script = """
                const { Participant } = require('./coop');
                new Participant({ engineId: 'node-intruder' })
                  .saga('stock', 'node-stock', [{ name: 'count', run: async () => {} }])
                  .start()
                  .then(() => { console.log('started'); process.exit(0); },
                        (e) => { console.log(e.message); process.exit(1); });
                """;
        NodeProcess.Ran ran = NodeProcess.run(db, "-e", script);

        assertThat(ran.exitCode()).as(ran.output()).isEqualTo(1);
        // the Java engine's registration stands as it was: not taken over, no version or engine row of the intruder
        assertThat(column("SELECT topic || ' ' || last_engine FROM coop.saga_registration WHERE saga = ?", "stock"))
                .containsExactly("stock-checked " + engine.id());
        assertThat(column("SELECT last_engine FROM coop.saga_version WHERE saga = ?", "stock"))
                .containsExactly(engine.id());
        assertThat(column("SELECT id FROM coop.engine WHERE id = ?", "node-intruder")).isEmpty();
        assertThat(ran.output()).isEqualTo("Saga 'stock' is registered for topic 'stock-checked' in schema 'coop',"
                + " not for topic 'node-stock'; retire it first (CoopClient.retireSaga) or choose another saga name");
    }

    @Test
    void node_refuses_saga_and_step_names_that_the_protocol_forbids() throws Exception {
        String script = """
                const { Participant } = require('./coop');
                const run = async () => {};
                for (const [saga, steps] of [
                  ['-dash-first', [{ name: 'a', run }]],
                  ['names', [{ name: 'Rollback of a', run }]],
                  ['names', [{ name: 'pay (child failure handler)', run }]],
                  ['names', [{ name: 'pay', run }, { name: 'pay', run }]],
                  ['names', [{ name: 'pay', run, retry: { attempts: 0 } }]],
                  ['names', [{ name: 'pay', run, retry: { attempts: 3, park: true } }]],
                ]) {
                  try {
                    new Participant({}).saga(saga, 'names-topic', steps);
                    console.log('accepted ' + saga);
                  } catch (e) {
                    console.log(e.message);
                  }
                }
                """;
        NodeProcess.Ran ran = NodeProcess.run(db, "-e", script);

        assertThat(ran.output().lines()).containsExactly(
                "Saga name '-dash-first' and topic 'names-topic' must be 1-200 characters of [A-Za-z0-9._:/-],"
                        + " starting with a letter or digit",
                "Step name 'Rollback of a' in saga 'names' imitates the names Coop logs for rollbacks, child-failure"
                        + " handlers and finally parts; choose another",
                "Step name 'pay (child failure handler)' in saga 'names' imitates the names Coop logs for rollbacks,"
                        + " child-failure handlers and finally parts; choose another",
                "Saga 'names' already has a step named 'pay'",
                "The retry policy of step 'pay': attempts must be an integer between 1 and 1000000 (was"
                        + " {\"attempts\":0})",
                "accepted names");
    }

    /** The same order through the Java twin of the Node saga: the event logs must be the same, row for row. */
    private static void assertSameLogAsJavaTwin(CoopClient client, MessageId nodeRoot, Order twinOrder,
            Outcome expected) {
        MessageId twin = client.launch(ORDER_PLACED_TWIN, twinOrder);
        assertThat(client.awaitCompletion(twin, WAIT)).isEqualTo(expected);
        List<String> javaRows = EventLog.rows(client.events(twin)).stream()
                .map(row -> row.replace("orders-twin", "orders").replace("java-fulfilment", "node-fulfilment"))
                .toList();
        assertThat(EventLog.rows(client.events(nodeRoot))).containsExactlyElementsOf(javaRows);
    }

    private static String children(Connection c, java.util.UUID runId) throws SQLException {
        try (var ps = c.prepareStatement("SELECT coalesce(string_agg(status, ',' ORDER BY status), 'none')"
                + " FROM coop.run WHERE parent_id = ?")) {
            ps.setObject(1, runId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    private static void ledger(Connection c, String order, String entry) throws SQLException {
        try (var ps = c.prepareStatement("INSERT INTO fulfilment_ledger (order_id, entry) VALUES (?, ?)")) {
            ps.setString(1, order);
            ps.setString(2, entry);
            ps.executeUpdate();
        }
    }

    private static void undo(Connection c, String who, String order, String why) throws SQLException {
        try (var ps = c.prepareStatement("INSERT INTO fulfilment_undo (who, order_id, why) VALUES (?, ?, ?)")) {
            ps.setString(1, who);
            ps.setString(2, order);
            ps.setString(3, why);
            ps.executeUpdate();
        }
    }

    private static List<String> ledger(String order) throws SQLException {
        return column("SELECT entry FROM fulfilment_ledger WHERE order_id = ? ORDER BY seq", order);
    }

    private static List<String> undone(String order) throws SQLException {
        return column("SELECT who FROM fulfilment_undo WHERE order_id = ? ORDER BY seq", order);
    }

    private static List<String> undoReasons(String order) throws SQLException {
        return column("SELECT why FROM fulfilment_undo WHERE order_id = ? ORDER BY seq", order);
    }

    private static boolean waitingForLock(String table) {
        try {
            return !column("SELECT pid::text FROM pg_locks WHERE NOT granted AND relation = ?::regclass", table)
                    .isEmpty();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The version of the run of {@code saga} in the hierarchy of {@code root}. */
    private static int version(String saga, MessageId root) {
        String version = runValue("version::text", saga, root);
        return version.equals("none") ? -1 : Integer.parseInt(version);
    }

    /** The status, pending children and failure of the run of {@code saga} in the hierarchy of {@code root}. */
    private static String runState(String saga, MessageId root) {
        return runValue("status || ' ' || pending_children || ' ' || coalesce(failure::text, '-')", saga, root);
    }

    /**
     * A text {@code expression} (a constant of this test) of the run of {@code saga} in the hierarchy of {@code root},
     * or "none".
     */
    private static String runValue(String expression, String saga, MessageId root) {
        try (Connection c = db.dataSource().getConnection();
                var ps = c.prepareStatement("SELECT " + expression
                        + " FROM coop.run WHERE saga = ? AND lineage[1] = ?")) {
            ps.setString(1, saga);
            ps.setObject(2, root.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : "none";
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static List<String> column(String sql, String parameter) throws SQLException {
        try (Connection c = db.dataSource().getConnection(); var ps = c.prepareStatement(sql)) {
            ps.setString(1, parameter);
            List<String> values = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    values.add(rs.getString(1));
                }
            }
            return values;
        }
    }
}
