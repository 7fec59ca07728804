package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Cancelling or rolling back the runs a filter selects: in bounded batches, each run logged, each hierarchy audited. */
class SelectionActionsTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Order(String id, boolean bankDown) {
    }

    @Test
    void a_selection_by_saga_status_and_failure_type_is_cancelled_and_the_rest_left_alone(DataSource dataSource) {
        Topic<Order> topic = Topic.of("select-orders", Order.class);
        Set<String> compensated = ConcurrentHashMap.newKeySet();
        Saga<Order> saga = Saga.on(topic, "select-order")
                .step("reserve", step -> {
                })
                .compensateWith((step, cause) -> compensated.add(step.payload().id()))
                .step("pay", step -> {
                    if (step.payload().bankDown()) {
                        throw new IOException("the bank is down");
                    }
                    throw new IllegalStateException("card refused, but parked for a person to look at");
                })
                .retry(RetryPolicy.attempts(1).parkWhenExhausted())
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            List<MessageId> bankDown = List.of(client.launch(topic, new Order("a", true)),
                    client.launch(topic, new Order("b", true)));
            MessageId refused = client.launch(topic, new Order("c", false));
            Await.until("three parked runs", WAIT, () -> client.countParked("select-order") == 3);

            RunQuery selection = RunQuery.newest().saga("select-order").status(RunStatus.PARKED)
                    .failureType("IOException");
            assertThat(client.countRuns(selection)).as("the dry run").containsEntry(RunStatus.PARKED, 2L);
            assertThatThrownBy(() -> client.cancel(selection, "olga", " ")).isInstanceOf(
                    CoopValidationException.class).hasMessageContaining("reason");
            assertThatThrownBy(() -> client.cancel(RunQuery.newest().status(RunStatus.PARKED), "olga", "all"))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("selection must name a saga");

            assertThat(client.cancel(selection, "olga", "the bank closed these accounts")).isEqualTo(2);
            for (MessageId id : bankDown) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
                assertThat(client.audit(id)).singleElement().satisfies(a -> {
                    assertThat(a.action()).isEqualTo("cancel-selection");
                    assertThat(a.actor()).isEqualTo("olga");
                    assertThat(a.reason()).isEqualTo("the bank closed these accounts");
                    assertThat(a.outcome()).isEqualTo("REQUESTED for 1 run(s) of a selection: saga=select-order"
                            + " status=PARKED failureType=IOException");
                });
                assertThat(client.events(id)).extracting(e -> e.type()).contains(EventType.CANCELLATION_REQUESTED);
            }
            assertThat(compensated).containsExactlyInAnyOrder("a", "b");
            assertThat(client.statuses(refused)).containsExactly(RunStatus.PARKED);
            assertThat(client.cancel(selection, "olga", "again")).as("nothing left to cancel").isZero();
        }
    }

    @Test
    void committed_runs_of_a_selection_are_rolled_back_with_their_compensations(DataSource dataSource) {
        Topic<Order> topic = Topic.of("select-undo", Order.class);
        Set<String> compensated = ConcurrentHashMap.newKeySet();
        Saga<Order> saga = Saga.on(topic, "select-undo")
                .step("book", step -> {
                })
                .compensateWith((step, cause) -> compensated.add(step.payload().id()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            List<MessageId> ids = List.of(client.launch(topic, new Order("x", false)),
                    client.launch(topic, new Order("y", false)));
            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            RunQuery selection = RunQuery.newest().saga("select-undo");
            assertThat(client.rollback(selection, "olga", "booked twice")).isEqualTo(2);
            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
                assertThat(client.audit(id)).singleElement()
                        .satisfies(a -> assertThat(a.action()).isEqualTo("rollback-selection"));
            }
            assertThat(compensated).containsExactlyInAnyOrder("x", "y");
            assertThat(client.rollback(selection, "olga", "again")).as("already rolled back").isZero();
        }
    }

    @Test
    void a_bulk_cancel_of_many_runs_goes_in_batches_of_bounded_size(DataSource dataSource) throws Exception {
        int runs = Integer.getInteger("coop.test.bulk", 2_500);
        Coop.client(dataSource); // the schema
        insertParked(dataSource, runs, "select-many");
        CoopClient client = Coop.client(dataSource);
        RunQuery selection = RunQuery.newest().saga("select-many").status(RunStatus.PARKED);
        assertThat(client.countRuns(selection)).containsEntry(RunStatus.PARKED, (long) runs);

        long started = System.nanoTime();
        long cancelled = client.cancel(selection, "olga", "the campaign was withdrawn");
        long millis = (System.nanoTime() - started) / 1_000_000;
        System.out.printf("Cancelled %d parked runs in %d ms (batches of 1,000 runs, one transaction each)%n",
                cancelled, millis);

        assertThat(cancelled).isEqualTo(runs);
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("""
                        SELECT (SELECT count(*) FROM coop.audit WHERE action = 'cancel-selection'),
                               (SELECT count(*) FROM coop.event WHERE type = 'CANCELLATION_REQUESTED'),
                               (SELECT count(*) FROM coop.run WHERE saga = 'select-many' AND status = 'RUNNABLE'),
                               (SELECT count(DISTINCT xmin::text) FROM coop.cancellation)
                        """)) {
            rs.next();
            assertThat(rs.getLong(1)).as("one audit entry per hierarchy").isEqualTo(runs);
            assertThat(rs.getLong(2)).as("one CANCELLATION_REQUESTED event per run").isEqualTo(runs);
            assertThat(rs.getLong(3)).as("every parked run woken to give up").isEqualTo(runs);
            assertThat(rs.getLong(4)).as("transactions that cancelled them: 1,000 runs each at most")
                    .isEqualTo((runs + 999) / 1_000);
        }
        assertThat(client.cancel(selection.status(RunStatus.RUNNABLE), "olga", "again")).isZero();
    }

    /** {@code runs} parked runs of saga {@code saga}, each its own hierarchy, written directly (no engine). */
    static void insertParked(DataSource dataSource, int runs, String saga) throws Exception {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                WITH m AS (
                  INSERT INTO coop.message (id, topic, payload, root_id)
                  SELECT g, ?, '{}'::jsonb, g FROM (SELECT gen_random_uuid() AS g FROM generate_series(1, ?)) s
                  RETURNING id
                )
                INSERT INTO coop.run (id, message_id, saga, lineage, status, next_step, root_id)
                SELECT x.run, x.id, ?, ARRAY[x.id, x.run], 'PARKED', 'call', x.id
                  FROM (SELECT id, gen_random_uuid() AS run FROM m) x
                """)) {
            ps.setString(1, saga);
            ps.setInt(2, runs);
            ps.setString(3, saga);
            ps.executeUpdate();
        }
    }
}
