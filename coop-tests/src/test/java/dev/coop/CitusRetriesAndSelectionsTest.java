package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;
import dev.coop.test.CitusDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two paths of {@code AttemptHistoryTest} and {@code SelectionActionsTest} on a three-node Citus cluster: a step
 * retried past the attempts kept whole ends its series with the latest attempt in full (its summary is written from
 * bound values, not by an {@code INSERT ... SELECT} of the run that Citus cannot plan), and an operator's rollback of
 * a selection of committed hierarchies on several shards undoes each of them, children first, audited once each.
 */
class CitusRetriesAndSelectionsTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource());
    }

    @Test
    void a_step_retried_past_the_kept_attempts_commits_with_its_latest_attempt_in_full() {
        int succeedsOn = 6; // attempts 1-3 kept whole, 4 and 5 counted, 5 written when the series ends
        Topic<Empty> topic = Topic.of("citus-attempts-many", Empty.class);
        Saga<Empty> saga = AttemptHistoryTest.flaky(topic, "citus-attempts-many", succeedsOn);
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = engine.client().events(id);
            assertThat(events.stream().filter(e -> e.type() == EventType.ATTEMPT_FAILED).map(Event::attempt))
                    .as(EventLog.table(events)).containsExactly(1, 2, 3, 5);
            Event latest = events.stream().filter(e -> e.type() == EventType.ATTEMPT_FAILED).toList().getLast();
            assertThat(latest.exception()).contains("the gateway refused attempt 5");
            Invariants.assertAll(events);
        }
    }

    @Test
    void rolling_back_a_selection_on_several_shards_undoes_each_hierarchy_children_first_and_audits_each()
            throws SQLException {
        Topic<Empty> topic = Topic.of("citus-select-undo", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-select-undo-child", Empty.class);
        Set<String> compensated = ConcurrentHashMap.newKeySet();
        List<String> order = java.util.Collections.synchronizedList(new ArrayList<>());
        Saga<Empty> root = Saga.on(topic, "citus-select-undo")
                .step("book", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> {
                    compensated.add(step.messageId().value().toString());
                    order.add("root " + step.messageId().value());
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-select-undo-child")
                .step("reserve", step -> {
                })
                .compensateWith((step, cause) -> order.add("child " + step.lineage().root()))
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(root, child).start()) {
            CoopClient client = engine.client();
            List<MessageId> ids = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                ids.add(client.launch(topic, new Empty()));
            }
            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            assertThat(CitusOperatorsTest.shards(db.dataSource(), ids)).as("the hierarchies are on more than one shard")
                    .isGreaterThan(1);
            RunQuery selection = RunQuery.newest().saga("citus-select-undo");

            assertThat(client.rollback(selection, "olga", "booked twice")).isEqualTo(ids.size());
            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
                assertThat(client.audit(id)).singleElement().satisfies(a -> {
                    assertThat(a.action()).isEqualTo("rollback-selection");
                    assertThat(a.actor()).isEqualTo("olga");
                });
                String value = id.value().toString();
                assertThat(order).as("the child's compensation before its parent's")
                        .containsSubsequence("child " + value, "root " + value);
                Invariants.assertAll(client.events(id));
            }
            assertThat(compensated).hasSize(ids.size());
            assertThat(client.rollback(selection, "olga", "again")).as("already rolled back").isZero();
        }
    }
}
