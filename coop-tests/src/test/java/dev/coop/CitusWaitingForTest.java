package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunView;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.StepGate;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Why a tree's runnable run waits ({@code Inspection.waitingFor}) on a three-node Citus cluster, as on plain
 * PostgreSQL ({@code SagaLimitsTest}): a run of a saga with a concurrency limit of 1, due while another run of the
 * saga holds the slot in its step, reads "waiting for a slot (1 of 1 busy)"; the run in its step reads no reason (its
 * row lock is the step's transaction on the hierarchy's worker, which {@code xact_running} asks there); once the slot
 * is free, both commit and no reason is left.
 */
class CitusWaitingForTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    @Test
    void a_run_held_back_by_a_busy_slot_says_so_and_the_run_holding_it_does_not() throws Exception {
        Topic<Empty> topic = Topic.of("citus-waiting-for", Empty.class);
        StepGate gate = new StepGate();
        Saga<Empty> saga = Saga.on(topic, "citus-waiting-for").concurrency(1)
                .step("hold", step -> gate.pass())
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).workers(2).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId holding = client.launch(topic, new Empty());
            gate.awaitArrivals(1, WAIT);
            MessageId waiting = client.launch(topic, new Empty());
            // awaited: while a claim tries the run (and is refused its slot) it holds the run's row lock, and a
            // locked run reads as running, with no reason
            Await.until("the waiting run's reason", WAIT,
                    () -> "waiting for a slot (1 of 1 busy)".equals(root(client, waiting).waitingFor()));
            RunView running = root(client, holding);
            assertThat(running.status()).isEqualTo(RunStatus.RUNNABLE);
            assertThat(running.waitingFor()).as("the run in its step holds the slot").isNull();
            assertThat(lockedOnItsWorker(holding)).as("xact_running of the holding run's xmax, on its worker").isTrue();
            gate.open();
            assertThat(client.awaitCompletion(holding, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(waiting, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(root(client, waiting).waitingFor()).isNull();
        } finally {
            gate.open();
        }
    }

    /** Whether the message's run row is locked by a live transaction, asked on the worker the read is routed to. */
    private static boolean lockedOnItsWorker(MessageId message) throws java.sql.SQLException {
        try (java.sql.Connection c = db.dataSource().getConnection();
                java.sql.PreparedStatement ps = c.prepareStatement("SELECT coop.xact_running(r.xmax) FROM coop.run r"
                        + " WHERE r.root_id = ? AND r.message_id = ?")) {
            ps.setObject(1, message.value());
            ps.setObject(2, message.value());
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getBoolean(1);
            }
        }
    }

    private static RunView root(CoopClient client, MessageId message) {
        return client.tree(message).runs().getFirst();
    }
}
