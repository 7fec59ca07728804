package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Order;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Signals by key: an external task opened by key, plus a mailbox for signals sent before anyone waits. */
class SignalTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final Duration KEEP = Duration.ofHours(1);

    record Shipped(String carrier) {
    }

    static Saga<Order> saga(Topic<Order> topic, String name) {
        return Saga.on(topic, name)
                .step("wait", step -> step.awaitSignal("shipped", "shipment/" + step.payload().id()))
                .step("use", step -> step.setResult(step.taskResult("shipped", Shipped.class).carrier()))
                .build();
    }

    @Test
    void a_signal_sent_to_a_waiting_run_is_delivered(DataSource dataSource) {
        Topic<Order> topic = Topic.of("signal-wait", Order.class);
        try (CoopEngine engine = Coop.engine(dataSource).register(saga(topic, "signal-wait-saga")).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("s1", 1));
            Await.until("waiting", WAIT, () -> client.externalTask("shipment/s1").isPresent());
            assertThat(client.signal("shipment/s1", new Shipped("dhl"), KEEP)).isEqualTo(SignalOutcome.DELIVERED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(id, String.class)).isEqualTo("dhl");
        }
    }

    @Test
    void a_signal_that_does_not_come_in_time_is_a_child_failure_the_handler_can_recover_from(DataSource dataSource) {
        Topic<Order> topic = Topic.of("signal-late", Order.class);
        java.util.List<String> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "signal-late-saga")
                .step("wait", step -> step.awaitSignal("shipped", "late/" + step.payload().id(),
                        Duration.ofMillis(300)))
                .onChildFailure((step, failure, handling, pending) -> {
                    seen.add(failure.failure().causes().getFirst().message());
                    step.awaitSignal("shipped", "late/" + step.payload().id()); // again, without a bound
                    return pending;
                })
                .step("use", step -> step.setResult(step.taskResult("shipped", Shipped.class).carrier()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("l1", 1));
            Await.until("the first wait to time out", WAIT, () -> !seen.isEmpty());
            assertThat(seen.getFirst()).contains("was not settled by its timeout");
            Await.until("waiting again", WAIT, () -> client.externalTask("late/l1")
                    .map(t -> t.state() == TaskState.OPEN).orElse(false));
            assertThat(client.signal("late/l1", new Shipped("ups"), KEEP)).isEqualTo(SignalOutcome.DELIVERED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(id, String.class)).isEqualTo("ups");
        }
    }

    @Test
    void a_signal_sent_before_the_run_waits_is_kept_and_taken_once(DataSource dataSource) {
        Topic<Order> topic = Topic.of("signal-early", Order.class);
        try (CoopEngine engine = Coop.engine(dataSource).register(saga(topic, "signal-early-saga")).start()) {
            CoopClient client = engine.client();
            assertThat(client.signal("shipment/s2", new Shipped("ups"), KEEP)).isEqualTo(SignalOutcome.KEPT);
            assertThat(client.signal("shipment/s2", new Shipped("fedex"), KEEP)).isEqualTo(SignalOutcome.KEPT);
            MessageId first = client.launch(topic, new Order("s2", 1));
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(first, String.class)).isEqualTo("ups"); // oldest first
            MessageId second = client.launch(topic, new Order("s2", 2));
            assertThat(client.awaitCompletion(second, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(second, String.class)).isEqualTo("fedex");
            MessageId third = client.launch(topic, new Order("s2", 3)); // nothing kept any more: it waits
            Await.until("third waits", WAIT, () -> client.externalTask("shipment/s2")
                    .filter(t -> t.state() == TaskState.OPEN).isPresent());
            assertThat(client.statuses(third)).containsExactly(RunStatus.WAITING);
            assertThat(client.signal("shipment/s2", new Shipped("post"), KEEP)).isEqualTo(SignalOutcome.DELIVERED);
            assertThat(client.awaitCompletion(third, WAIT)).isEqualTo(Outcome.COMMITTED);
            for (MessageId id : java.util.List.of(first, second, third)) { // a kept signal's task: with its opener
                Invariants.assertAll(client.events(id));
            }
        }
    }

    @Test
    void bad_signals_are_refused_by_name(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        assertThatThrownBy(() -> client.signal("ct_x", "p", KEEP)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("must not start with 'ct_'");
        assertThatThrownBy(() -> client.signal("k", "p", Duration.ZERO)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("keepFor");
        assertThatThrownBy(() -> client.signal("", "p", KEEP)).isInstanceOf(CoopValidationException.class);
    }
}
