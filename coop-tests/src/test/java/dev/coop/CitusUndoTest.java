package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.UndoTest.Child;
import dev.coop.UndoTest.Order;
import dev.coop.UndoTest.Tree;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.Failure;
import dev.coop.failure.RollbackRequestedException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.CitusDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Undo ({@code CoopClient.rollback}) of committed hierarchies on a three-node Citus cluster (the key assertions of
 * {@code UndoTest}): a whole hierarchy rolls back children first, a subtree alone and then the rest, a second undo
 * and an undo of a hierarchy that rolled back on its own are refused.
 */
class CitusUndoTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    static CoopEngine start(Tree tree) {
        return CitusHappyPathTest.engine(db.dataSource()).register(tree.root, tree.child, tree.grandchild).start();
    }

    @Test
    void undoing_a_whole_hierarchy_rolls_back_every_run_children_first() {
        Tree tree = new Tree("citus-undo-all");
        try (CoopEngine engine = start(tree)) {
            CoopClient client = engine.client();
            MessageId id = client.launch(tree.rootTopic, new Order("42"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            int committedEvents = client.events(id).size();

            client.rollback(id, "order 42 was a mistake");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            String log = EventLog.table(events);
            assertThat(tree.compensations).as(log).hasSize(8);
            assertThat(tree.compensations.getFirst()).isEqualTo("root:r1");
            assertThat(tree.compensations.getLast()).isEqualTo("root:r0");
            for (String name : List.of("a", "b")) {
                assertThat(tree.childOrder(name)).as(log).containsExactly("child-" + name + ":c1",
                        "grandchild-" + name + ":g0", "child-" + name + ":c0");
            }
            Event request = events.get(committedEvents);
            assertThat(EventLog.row(request)).as(log).isEqualTo("ROLLBACK_EMITTED - -");
            assertThat(Failure.fromJson(request.exception()).type()).isEqualTo(RollbackRequestedException.TYPE);
            assertThat(client.statuses(id)).containsOnly(RunStatus.ROLLED_BACK);
            Invariants.assertAll(events);
        }
    }

    @Test
    void undoing_a_subtree_rolls_back_only_it_and_a_later_undo_of_the_rest_skips_it() {
        Tree tree = new Tree("citus-undo-sub");
        try (CoopEngine engine = start(tree)) {
            CoopClient client = engine.client();
            MessageId id = client.launch(tree.rootTopic, new Order("7"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            client.rollback(tree.childLineages.get("a"), "only a");
            MessageId a = tree.childMessages.get("a");
            assertThat(client.awaitCompletion(a, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(tree.compensations).as(EventLog.table(client.events(id)))
                    .containsExactly("child-a:c1", "grandchild-a:g0", "child-a:c0");
            assertThat(client.statuses(id)).containsExactly(RunStatus.COMMITTED);
            assertThatThrownBy(() -> client.rollback(tree.childLineages.get("a"), "again"))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("already rolled back");

            tree.compensations.clear();
            client.rollback(id, "now the rest");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(tree.compensations).as(EventLog.table(client.events(id)))
                    .containsExactly("root:r1", "child-b:c1", "grandchild-b:g0", "child-b:c0", "root:r0");
            Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void undoing_twice_or_a_hierarchy_that_rolled_back_on_its_own_is_refused() {
        Tree tree = new Tree("citus-undo-twice");
        Topic<Child> failing = Topic.of("citus-undo-failed", Child.class);
        Saga<Child> fails = Saga.on(failing, "citus-undo-failed").step("s0", step -> {
            throw new IllegalStateException("no");
        }).build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource())
                .register(tree.root, tree.child, tree.grandchild, fails).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(tree.rootTopic, new Order("1"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            client.rollback(id, "first");
            assertThatThrownBy(() -> client.rollback(id, "second")).isInstanceOf(CoopValidationException.class);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThatThrownBy(() -> client.rollback(id, "third")).isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("already rolled back");
            assertThat(tree.compensations).hasSize(8);

            MessageId failed = client.launch(failing, new Child("x"));
            assertThat(client.awaitCompletion(failed, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThatThrownBy(() -> client.rollback(failed, "undo")).isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("already rolled back");
        }
    }
}
