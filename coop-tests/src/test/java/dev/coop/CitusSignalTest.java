package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Order;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.Invariants;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Signals and task keys on a three-node Citus cluster (the key assertions of {@code SignalTest} and
 * {@code ExternalTaskTest}), through the task's opening on Citus ({@code RootOpening}: the task on the coordinator,
 * its message, events and run as bound rows on the hierarchy's shard): a signal kept before the wait is taken when
 * the step opens it (the task's run written COMMITTED, with its SEEN and COMMITTED), oldest first; one sent to a
 * waiting run is delivered; a key an open task holds fails the step that opens it again, and nothing of that
 * opening is written.
 */
class CitusSignalTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);
    static final Duration KEEP = Duration.ofHours(1);

    record Shipped(String carrier) {
    }

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    @Test
    void a_kept_signal_is_taken_when_the_step_waits_and_a_later_one_is_delivered() {
        Topic<Order> topic = Topic.of("citus-signal", Order.class);
        Saga<Order> saga = Saga.on(topic, "citus-signal-saga")
                .step("wait", step -> step.awaitSignal("shipped", "citus-shipment/" + step.payload().id()))
                .step("use", step -> step.setResult(step.taskResult("shipped", Shipped.class).carrier()))
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga).start()) {
            CoopClient client = engine.client();
            assertThat(client.signal("citus-shipment/s1", new Shipped("ups"), KEEP)).isEqualTo(SignalOutcome.KEPT);
            assertThat(client.signal("citus-shipment/s1", new Shipped("fedex"), KEEP)).isEqualTo(SignalOutcome.KEPT);
            MessageId first = client.launch(topic, new Order("s1", 1));
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(first, String.class)).isEqualTo("ups"); // oldest first
            MessageId second = client.launch(topic, new Order("s1", 2));
            assertThat(client.awaitCompletion(second, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(second, String.class)).isEqualTo("fedex");
            MessageId third = client.launch(topic, new Order("s1", 3)); // nothing kept any more: it waits
            Await.until("third waits", WAIT, () -> client.externalTask("citus-shipment/s1")
                    .filter(t -> t.state() == TaskState.OPEN).isPresent());
            assertThat(client.signal("citus-shipment/s1", new Shipped("post"), KEEP))
                    .isEqualTo(SignalOutcome.DELIVERED);
            assertThat(client.awaitCompletion(third, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(third, String.class)).isEqualTo("post");
            for (MessageId id : java.util.List.of(first, second, third)) {
                // a kept signal's task is logged SEEN and COMMITTED by its opener's transaction, before the opener's
                // SUSPENDED: Invariants knows it committed with the step
                Invariants.assertAll(client.events(id));
                assertThat(client.events(id).stream().filter(e -> "~external-task".equals(e.saga()))
                        .map(dev.coop.inspect.Event::type))
                        .containsExactly(EventType.SEEN, EventType.COMMITTED);
            }
        }
    }

    @Test
    void a_key_held_by_an_open_task_fails_the_step_that_opens_it_again() {
        Topic<Order> topic = Topic.of("citus-task-key-reuse", Order.class);
        Saga<Order> saga = Saga.on(topic, "citus-task-key-reuse-saga")
                .step("ask", step -> step.openTask("approval", step.payload(), TaskOptions.none().key("citus-same/1")))
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId first = client.launch(topic, new Order("k1", 1));
            Await.until("the first opened its task", WAIT, () -> client.externalTask("citus-same/1")
                    .filter(t -> t.state() == TaskState.OPEN).isPresent());
            MessageId second = client.launch(topic, new Order("k2", 1));
            assertThat(client.awaitCompletion(second, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            String why = client.events(second).stream().filter(e -> e.type() == EventType.ROLLING_BACK)
                    .findFirst().orElseThrow().exception();
            assertThat(why).contains("citus-same/1").contains("already held by an open task");
            assertThat(client.tree(second).runs().getFirst().children()).as("nothing of the refused opening")
                    .isEmpty();
            assertThat(client.complete("citus-same/1", "ok")).isEqualTo(TaskOutcome.SETTLED);
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            Invariants.assertAll(client.events(first));
            Invariants.assertAll(client.events(second));
        }
    }
}
