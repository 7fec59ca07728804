package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.Invariants;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Who a step waits for: every saga registered for the topic in the database when the message is emitted, wherever and
 * whether or not its engines run.
 */
class TopologyTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void parent_waits_for_a_saga_whose_engines_are_all_down_until_one_comes_back(DataSource dataSource) {
        Topic<Empty> parentTopic = Topic.of("engines-down-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("engines-down-child", Empty.class);
        Topic<Empty> otherTopic = Topic.of("engines-down-other", Empty.class);
        Saga<Empty> child = Saga.on(childTopic, "engines-down-child-handler")
                .step("handle", step -> {
                })
                .build();
        Saga<Empty> parent = Saga.on(parentTopic, "engines-down-parent-handler")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> {
                })
                .build();
        Saga<Empty> other = Saga.on(otherTopic, "engines-down-other-handler")
                .step("quick", step -> {
                })
                .build();
        try (CoopEngine registersChild = Coop.engine(dataSource).name("child-engine").workers(1).register(child)
                .start()) {
            assertThat(CoopTables.of(dataSource).registeredTopic("engines-down-child-handler"))
                    .isEqualTo("engines-down-child");
        }
        try (CoopEngine parentEngine = Coop.engine(dataSource).name("parent-engine").workers(2)
                .register(parent, other).start()) {
            CoopClient client = parentEngine.client();
            MessageId id = client.launch(parentTopic, new Empty());
            MessageId childMessage = awaitChildMessage(client, id);
            assertThat(client.statuses(childMessage)).containsExactly(RunStatus.RUNNABLE);
            // the parent engine is idle but alive: an unrelated hierarchy completes, the parent keeps waiting
            MessageId unrelated = client.launch(otherTopic, new Empty());
            assertThat(client.awaitCompletion(unrelated, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.statuses(id)).containsExactly(RunStatus.WAITING);
            assertThat(client.statuses(childMessage)).containsExactly(RunStatus.RUNNABLE);

            try (CoopEngine childEngine = Coop.engine(dataSource).name("child-engine").workers(1).register(child)
                    .start()) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                List<Event> events = client.events(id);
                assertThat(events).filteredOn(e -> "engines-down-child-handler".equals(e.saga()))
                        .extracting(Event::engine).containsOnly(childEngine.id());
                Invariants.assertAll(events);
            }
        }
    }

    private static MessageId awaitChildMessage(CoopClient client, MessageId root) {
        return Await.value("the parent's step to launch its child", WAIT,
                () -> client.events(root).stream()
                        .filter(e -> e.type() == EventType.EMITTED && "launch".equals(e.step()))
                        .map(Event::messageId).findFirst().orElse(null));
    }

    @Test
    void a_message_launched_before_any_saga_registered_for_its_topic_is_unhandled_and_stays_so(
            DataSource dataSource) {
        Topic<Empty> topic = Topic.of("registered-later", Empty.class);
        CoopClient client = Coop.client(dataSource);
        MessageId early = client.launch(topic, new Empty());
        assertThat(client.statuses(early)).isEmpty();
        assertThat(client.awaitCompletion(early, WAIT)).isEqualTo(Outcome.UNHANDLED);

        Saga<Empty> saga = Saga.on(topic, "registered-later-handler").step("handle", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId late = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(late, WAIT)).isEqualTo(Outcome.COMMITTED);
            // the saga handles what is emitted from its registration on, not what came before
            assertThat(engine.client().statuses(early)).isEmpty();
            assertThat(CoopTables.of(dataSource).eventRows(early)).isEqualTo(1);
        }
    }

    @Test
    void a_retired_saga_is_no_longer_waited_for_and_its_name_can_move_to_another_topic(DataSource dataSource) {
        Topic<Empty> parentTopic = Topic.of("retired-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("retired-child", Empty.class);
        Topic<Empty> newTopic = Topic.of("retired-new-topic", Empty.class);
        Saga<Empty> child = Saga.on(childTopic, "retired-child-handler").step("handle", step -> {
        }).build();
        Saga<Empty> parent = Saga.on(parentTopic, "retired-parent-handler")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(child).start()) {
            // registered while its engine ran
        }
        CoopClient client = Coop.client(dataSource);
        assertThat(client.retireSaga("retired-child-handler")).isTrue();
        assertThat(client.retireSaga("retired-child-handler")).isFalse();
        assertThat(CoopTables.of(dataSource).registeredTopic("retired-child-handler")).isNull();

        try (CoopEngine engine = Coop.engine(dataSource).register(parent).start()) {
            MessageId id = engine.client().launch(parentTopic, new Empty());
            // nobody handles the child topic any more, so the parent does not wait
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }

        Saga<Empty> moved = Saga.on(newTopic, "retired-child-handler").step("handle", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(moved).start()) {
            assertThat(CoopTables.of(dataSource).registeredTopic("retired-child-handler"))
                    .isEqualTo("retired-new-topic");
            MessageId id = engine.client().launch(newTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }
}
