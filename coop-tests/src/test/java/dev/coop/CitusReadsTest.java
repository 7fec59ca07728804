package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;
import dev.coop.test.CitusDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The client's inspection on a three-node Citus cluster: a hierarchy's events (whole and in pages), its tree with
 * children, a run's tree by lineage and by id, statuses, listings and counts (docs/guide/citus.md, "The reads"). One
 * hierarchy, a parent and three children, runs once for the class; every test reads it. The log's order is not
 * asserted: on Citus a SEEN is written on the worker and takes its id from the worker's range of the sequence.
 */
class CitusReadsTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Topic<Empty> PARENT = Topic.of("citus-reads-parent", Empty.class);
    static final Topic<Empty> CHILD = Topic.of("citus-reads-child", Empty.class);

    static CoopClient client;
    static MessageId root;

    @BeforeAll
    static void runAHierarchy() {
        client = Coop.client(db.dataSource()); // migrations and the Citus layout
        Saga<Empty> parent = Saga.on(PARENT, "citus-reads-parent")
                .step("fan-out", step -> {
                    for (int i = 0; i < 3; i++) {
                        step.launch(CHILD, new Empty());
                    }
                })
                .step("after", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(CHILD, "citus-reads-child")
                .step("first", step -> {
                })
                .step("second", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).notifications(false).pollInterval(Duration.ofMillis(50))
                .register(parent, child).start()) {
            root = engine.client().launch(PARENT, new Empty());
            assertThat(engine.client().awaitCompletion(root, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void the_events_of_a_hierarchy_and_of_a_child_message_are_read_whole_and_in_pages() {
        List<Event> events = client.events(root); // not Invariants.assertAll: the SEEN ids (docs/guide/citus.md)
        assertThat(events.getFirst().type()).isEqualTo(EventType.EMITTED);
        assertThat(events).filteredOn(e -> e.type() == EventType.COMMITTED).hasSize(4);
        assertThat(events).filteredOn(e -> e.type() == EventType.EMITTED).hasSize(4);

        MessageId child = events.stream().filter(e -> e.type() == EventType.EMITTED && !e.messageId().equals(root))
                .findFirst().orElseThrow().messageId();
        List<Event> ofChild = client.events(child);
        assertThat(ofChild.getFirst().messageId()).isEqualTo(child);
        assertThat(ofChild).extracting(Event::type).contains(EventType.EMITTED, EventType.COMMITTED);
        assertThat(ofChild).allMatch(e -> e.lineage().root().equals(root.value()));
        assertThat(ofChild).filteredOn(e -> e.type() == EventType.COMMITTED).hasSize(1);

        List<Event> page = client.events(root, events.get(1).id(), 3);
        assertThat(page).containsExactlyElementsOf(events.subList(2, 5));
    }

    @Test
    void the_tree_of_a_hierarchy_has_its_children_and_their_steps() {
        Hierarchy tree = client.tree(root);
        assertThat(tree.topic()).isEqualTo(PARENT.name());
        RunView parent = tree.runs().getFirst();
        assertThat(parent.saga()).isEqualTo("citus-reads-parent");
        assertThat(parent.status()).isEqualTo(RunStatus.COMMITTED);
        assertThat(parent.steps()).extracting(StepView::name).containsExactly("fan-out", "after");
        assertThat(parent.children()).hasSize(3).allSatisfy(c -> {
            assertThat(c.saga()).isEqualTo("citus-reads-child");
            assertThat(c.status()).isEqualTo(RunStatus.COMMITTED);
            assertThat(c.steps()).extracting(StepView::name).containsExactly("first", "second");
        });

        RunView child = parent.children().get(1);
        assertThat(client.tree(child.messageId()).runs()).singleElement()
                .satisfies(r -> assertThat(r.runId()).isEqualTo(child.runId()));
        assertThat(client.tree(child.lineage()).steps()).isEqualTo(child.steps());
        assertThat(client.tree(new Lineage(List.of(child.runId()))).lineage()).isEqualTo(child.lineage());
    }

    @Test
    void a_runs_status_listing_and_counts_are_read() {
        assertThat(client.statuses(root)).containsExactly(RunStatus.COMMITTED);
        assertThat(client.results(root)).singleElement().satisfies(r -> assertThat(r.saga())
                .isEqualTo("citus-reads-parent"));
        List<RunSummary> children = client.runs(new RunQuery(null, "citus-reads-child", null, null, null, 10));
        assertThat(children).hasSize(3).allSatisfy(r -> {
            assertThat(r.lineage().root()).isEqualTo(root.value());
            assertThat(r.topic()).isEqualTo(CHILD.name());
            assertThat(client.statuses(r.messageId())).containsExactly(RunStatus.COMMITTED);
        });
        assertThat(client.countRuns(new RunQuery(RunStatus.COMMITTED, "citus-reads-child", null, null, null, 10)))
                .isEqualTo(Map.of(RunStatus.COMMITTED, 3L));
        assertThat(client.runs(new RunQuery(null, null, null, null, null, 10, null, "no-such-tag"))).isEmpty();
    }
}
