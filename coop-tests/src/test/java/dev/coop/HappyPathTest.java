package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class HappyPathTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void one_level_hierarchy_reads_like_the_seed_table(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("one-level-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("one-level-child", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "root-handler")
                .step("0", step -> step.launch(childTopic, new Empty()))
                .step("1", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "child-handler")
                .step("0", step -> {
                })
                .step("1", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = engine.client().events(id);
            assertThat(EventLog.rows(events)).containsExactly(
                    "EMITTED - -",
                    "SEEN root-handler -",
                    "EMITTED root-handler 0",
                    "SUSPENDED root-handler 0",
                    "SEEN child-handler -",
                    "SUSPENDED child-handler 0",
                    "SUSPENDED child-handler 1",
                    "COMMITTED child-handler 1",
                    "SUSPENDED root-handler 1",
                    "COMMITTED root-handler 1");
            Lineage rootLineage = events.get(1).lineage();
            assertThat(events.get(0).lineage().ids()).containsExactly(id.value());
            assertThat(rootLineage.depth()).isEqualTo(2);
            assertThat(rootLineage.root()).isEqualTo(id.value());
            Lineage childLineage = events.get(4).lineage();
            assertThat(childLineage.depth()).isEqualTo(3);
            assertThat(rootLineage.contains(childLineage)).isTrue();
            assertThat(events.get(2).lineage()).isEqualTo(rootLineage);
        }
    }

    @Test
    void parents_whose_last_step_launched_commit_in_the_transaction_of_their_last_child(DataSource dataSource) {
        Topic<Empty> chain = Topic.of("cascade-chain", Empty.class);
        Topic<Empty> leaf = Topic.of("cascade-leaf", Empty.class);
        Topic<Empty> top = Topic.of("cascade-top", Empty.class);
        Saga<Empty> topSaga = Saga.on(top, "cascade-top").step("down", step -> step.launch(chain, new Empty()))
                .build();
        Saga<Empty> middle = Saga.on(chain, "cascade-middle").step("down", step -> step.launch(leaf, new Empty()))
                .build();
        Saga<Empty> bottom = Saga.on(leaf, "cascade-leaf").step("work", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(topSaga, middle, bottom).start()) {
            MessageId id = engine.client().launch(top, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = engine.client().events(id);
            assertThat(EventLog.rows(events)).endsWith("SUSPENDED cascade-leaf work", "COMMITTED cascade-leaf work",
                    "COMMITTED cascade-middle down", "COMMITTED cascade-top down");
            // one transaction: the three COMMITTED events carry the start time of the leaf's step
            List<Event> committed = events.stream().filter(e -> e.type() == EventType.COMMITTED).toList();
            assertThat(committed).extracting(Event::startedAt).containsOnly(committed.getFirst().startedAt());
            dev.coop.test.Invariants.assertAll(events);
        }
    }
}
