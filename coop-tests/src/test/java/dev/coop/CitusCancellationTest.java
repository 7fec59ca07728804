package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CancellationRequestedException;
import dev.coop.failure.CoopTimeoutException;
import dev.coop.failure.Failure;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.CitusDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.StepGate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A client's cancellation and its timeout's explanation on a three-node Citus cluster: the cancellation's statement
 * names the hierarchy's root ({@code Operations.REQUEST_CANCELLATION_BY_ROOT}), so Citus routes it to one shard, and
 * the explanation of {@code awaitCompletion}'s timeout walks the hierarchy by root
 * ({@code Unfinished.WHY_UNFINISHED_BY_ROOT}), and the rollback a cancellation causes runs on the cluster.
 */
class CitusCancellationTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);
    /** How long a cancel may take while a step of the scope is held. */
    static final Duration PROMPT = Duration.ofSeconds(5);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    /** Registers {@code sagas} (an engine started and stopped) and returns a client. */
    static CoopClient registered(CitusDatabase db, Saga<?>... sagas) {
        CitusHappyPathTest.engine(db.dataSource()).workers(1).register(sagas).start().close();
        return Coop.client(db.dataSource());
    }

    @Test
    void cancelling_a_run_no_engine_claimed_records_one_request_and_says_the_second_was_already_requested()
            throws SQLException {
        Topic<Empty> topic = Topic.of("citus-cancel-unclaimed", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-cancel-unclaimed").step("s0", step -> {
        }).build();
        CoopClient client = registered(db, saga);
        MessageId id = client.launch(topic, new Empty());

        assertThat(client.cancel(id, "first")).isEqualTo(CancelResult.REQUESTED);
        assertThat(client.cancel(id, "second")).isEqualTo(CancelResult.ALREADY_REQUESTED);
        List<String> requests = requests(id);
        assertThat(requests).hasSize(1);
        Failure request = Failure.fromJson(requests.getFirst());
        assertThat(request.type()).isEqualTo(CancellationRequestedException.TYPE);
        assertThat(request.message()).isEqualTo("first");
        assertThat(client.statuses(id)).containsExactly(RunStatus.RUNNABLE);
    }

    @Test
    void a_cancellation_wakes_a_parked_run_and_a_waiting_one_as_on_plain_postgresql() throws SQLException {
        Topic<Empty> topic = Topic.of("citus-cancel-wake", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-cancel-wake").step("s0", step -> {
        }).build();
        CoopClient client = registered(db, saga);
        MessageId parked = client.launch(topic, new Empty());
        MessageId waiting = client.launch(topic, new Empty());
        set(db, parked, "status = 'PARKED'");
        set(db, waiting, "status = 'WAITING', runnable_at = 'infinity'");
        assertThat(client.statuses(parked)).containsExactly(RunStatus.PARKED);

        assertThat(client.cancel(parked, "stop")).isEqualTo(CancelResult.REQUESTED);
        assertThat(client.cancel(waiting, "stop")).isEqualTo(CancelResult.REQUESTED);
        assertThat(client.statuses(parked)).as("woken: its engine gives up at once")
                .containsExactly(RunStatus.RUNNABLE);
        assertThat(client.statuses(waiting)).containsExactly(RunStatus.RUNNABLE);
    }

    @Test
    void cancelling_a_finished_hierarchy_changes_nothing_and_says_so() throws SQLException {
        Topic<Empty> topic = Topic.of("citus-cancel-finished", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-cancel-finished").step("s0", step -> {
        }).build();
        CoopClient client = registered(db, saga);
        MessageId id = client.launch(topic, new Empty());
        set(db, id, "status = 'COMMITTED', finished_at = now()");

        assertThat(client.cancel(id, "too late")).isEqualTo(CancelResult.ALREADY_FINISHED);
        assertThat(requests(id)).isEmpty();
    }

    @Test
    void cancelling_while_the_first_step_runs_returns_without_waiting_for_the_step() throws Exception {
        Topic<Empty> topic = Topic.of("citus-cancel-running", Empty.class);
        StepGate gate = new StepGate(WAIT);
        Saga<Empty> saga = Saga.on(topic, "citus-cancel-running").step("s0", step -> gate.pass()).build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).workers(1).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Empty());
            gate.awaitArrivals(1, WAIT);

            CompletableFuture<CancelResult> cancel = CompletableFuture
                    .supplyAsync(() -> client.cancel(id, "the customer changed their mind"));
            assertThat(cancel.get(PROMPT.toMillis(), TimeUnit.MILLISECONDS))
                    .as("cancel() while the step holds its run's lock (skipped, not waited for)")
                    .isEqualTo(CancelResult.REQUESTED);
            assertThat(requests(id)).hasSize(1);
        } finally {
            gate.open();
        }
    }

    @Test
    void a_cancelled_running_step_gives_up_and_the_run_rolls_back() throws Exception {
        Topic<Empty> topic = Topic.of("citus-cancel-rolls-back", Empty.class);
        StepGate gate = new StepGate(WAIT);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "citus-cancel-rolls-back")
                .step("s0", step -> {
                    gate.pass();
                    ran.add("s0 finished its code");
                })
                .compensateWith((step, cause) -> ran.add("compensated s0 (must not run: s0 gave up)"))
                .step("s1", step -> ran.add("s1 (must not run)"))
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).workers(1).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Empty());
            gate.awaitArrivals(1, WAIT);
            assertThat(client.cancel(id, "stop")).isEqualTo(CancelResult.REQUESTED);
            gate.open();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            assertThat(ran).as(EventLog.table(events)).containsExactly("s0 finished its code");
            Event gaveUp = CompensationTest.find(events, e -> e.type() == EventType.ROLLING_BACK);
            CancellationTest.assertGaveUpBecauseCancelled(Failure.fromJson(gaveUp.exception()),
                    "citus-cancel-rolls-back");
        } finally {
            gate.open();
        }
    }

    @Test
    void a_wait_that_times_out_says_why_the_hierarchy_has_not_finished() throws SQLException {
        Topic<Empty> topic = Topic.of("citus-awaited-too-long", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-awaited-too-long").step("s0", step -> {
        }).build();
        CoopClient client = registered(db, saga);
        MessageId runnable = client.launch(topic, new Empty());
        assertThatThrownBy(() -> client.awaitCompletion(runnable, Duration.ofMillis(100)))
                .isInstanceOf(CoopTimeoutException.class)
                .hasMessageContaining("Message " + runnable)
                .hasMessageContaining("1 run of saga 'citus-awaited-too-long' runnable with no running engine");

        MessageId parked = client.launch(topic, new Empty());
        set(db, parked, "status = 'PARKED'");
        assertThatThrownBy(() -> client.awaitCompletion(parked, Duration.ofMillis(100)))
                .isInstanceOf(CoopTimeoutException.class)
                .hasMessageContaining("1 run of saga 'citus-awaited-too-long' parked (an operator must retry");
    }

    /**
     * The failures of a hierarchy's {@code CANCELLATION_REQUESTED} events, read by root ({@code client.events} is
     * refused on Citus: {@code ProbeSql.EVENTS}, claim area).
     */
    static List<String> requests(MessageId root) throws SQLException {
        List<String> out = new java.util.ArrayList<>();
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT exception::text FROM coop.event WHERE root_id = ?"
                                + " AND type = 'CANCELLATION_REQUESTED'")) {
            ps.setObject(1, root.value());
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    /** Sets columns of the runs of a root message, as a test writes a state no step can reach on Citus yet. */
    static void set(CitusDatabase db, MessageId root, String assignments) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "UPDATE coop.run SET " + assignments + " WHERE root_id = ?")) { // a constant of the test
            ps.setObject(1, root.value());
            assertThat(ps.executeUpdate()).isPositive();
        }
    }
}
