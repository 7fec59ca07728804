package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import dev.coop.test.StepRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The shape of hierarchies: levels, sagas per topic, messages per step, depth, and the scopes messages go to. */
class HierarchyTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Level(int remaining) {
    }

    record Item(int index) {
    }

    @Test
    void two_levels_read_in_order_with_each_lineage_extending_its_parents(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("two-levels-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("two-levels-child", Empty.class);
        Topic<Empty> grandchildTopic = Topic.of("two-levels-grandchild", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "two-levels-root-handler")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .step("r1", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "two-levels-child-handler")
                .step("c0", step -> step.launch(grandchildTopic, new Empty()))
                .step("c1", step -> {
                })
                .build();
        Saga<Empty> grandchild = Saga.on(grandchildTopic, "two-levels-grandchild-handler")
                .step("g0", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child, grandchild).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            List<Event> events = engine.client().events(id);
            assertThat(EventLog.rows(events)).containsExactly(
                    "EMITTED - -",
                    "SEEN two-levels-root-handler -",
                    "EMITTED two-levels-root-handler r0",
                    "SUSPENDED two-levels-root-handler r0",
                    "SEEN two-levels-child-handler -",
                    "EMITTED two-levels-child-handler c0",
                    "SUSPENDED two-levels-child-handler c0",
                    "SEEN two-levels-grandchild-handler -",
                    "SUSPENDED two-levels-grandchild-handler g0",
                    "COMMITTED two-levels-grandchild-handler g0",
                    "SUSPENDED two-levels-child-handler c1",
                    "COMMITTED two-levels-child-handler c1",
                    "SUSPENDED two-levels-root-handler r1",
                    "COMMITTED two-levels-root-handler r1");

            Lineage message = events.get(0).lineage();
            Lineage rootRun = events.get(1).lineage();
            Lineage childRun = events.get(4).lineage();
            Lineage grandchildRun = events.get(7).lineage();
            assertThat(message.ids()).containsExactly(id.value());
            assertThat(List.of(rootRun.depth(), childRun.depth(), grandchildRun.depth())).containsExactly(2, 3, 4);
            assertThat(message.contains(rootRun)).isTrue();
            assertThat(rootRun.contains(childRun)).isTrue();
            assertThat(childRun.contains(grandchildRun)).isTrue();
            assertThat(childRun.contains(rootRun)).isFalse();
            assertThat(List.of(rootRun.root(), childRun.root(), grandchildRun.root())).containsOnly(id.value());
            // a message emitted in a step carries the emitting run's lineage; every event of a run carries the run's
            assertThat(events.get(2).lineage()).isEqualTo(rootRun);
            assertThat(events.get(5).lineage()).isEqualTo(childRun);
            for (Event e : events) {
                if (e.type() != EventType.EMITTED && e.saga() != null) {
                    Lineage expected = switch (e.saga()) {
                        case "two-levels-root-handler" -> rootRun;
                        case "two-levels-child-handler" -> childRun;
                        default -> grandchildRun;
                    };
                    assertThat(e.lineage()).as("lineage of %s", EventLog.row(e)).isEqualTo(expected);
                }
            }
            // every run's own event names the message it handles
            assertThat(events.get(4).messageId()).isEqualTo(events.get(2).messageId());
            assertThat(events.get(7).messageId()).isEqualTo(events.get(5).messageId());
            assertThat(events).extracting(Event::engine).filteredOn(e -> e != null).containsOnly(engine.id());
            Invariants.assertAll(events);

            // the log of a child message is its sub-hierarchy: its EMITTED, then its runs and their descendants
            List<Event> childLog = engine.client().events(events.get(2).messageId());
            assertThat(EventLog.rows(childLog)).containsExactly(
                    "EMITTED two-levels-root-handler r0",
                    "SEEN two-levels-child-handler -",
                    "EMITTED two-levels-child-handler c0",
                    "SUSPENDED two-levels-child-handler c0",
                    "SEEN two-levels-grandchild-handler -",
                    "SUSPENDED two-levels-grandchild-handler g0",
                    "COMMITTED two-levels-grandchild-handler g0",
                    "SUSPENDED two-levels-child-handler c1",
                    "COMMITTED two-levels-child-handler c1");
            assertThat(engine.client().statuses(events.get(2).messageId())).containsExactly(RunStatus.COMMITTED);
        }
    }

    @Test
    void parent_step_waits_for_every_saga_of_the_topic(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("many-sagas-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("many-sagas-child", Empty.class);
        AtomicInteger childStepsDone = new AtomicInteger();
        AtomicInteger seenByNextStep = new AtomicInteger(-1);
        Saga<Empty> root = Saga.on(rootTopic, "many-sagas-root-handler")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> seenByNextStep.set(childStepsDone.get()))
                .build();
        List<Saga<Empty>> children = new ArrayList<>();
        for (String name : List.of("many-sagas-billing", "many-sagas-crm", "many-sagas-mail")) {
            children.add(Saga.on(childTopic, name)
                    .step("one", step -> childStepsDone.incrementAndGet())
                    .step("two", step -> childStepsDone.incrementAndGet())
                    .build());
        }
        try (CoopEngine engine = Coop.engine(dataSource).register(root).register(children.toArray(Saga[]::new))
                .start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            assertThat(seenByNextStep.get()).as("child steps done when the parent's next step ran").isEqualTo(6);
            List<Event> events = engine.client().events(id);
            MessageId child = events.stream().filter(e -> e.type() == EventType.EMITTED && e.saga() != null)
                    .findFirst().orElseThrow().messageId();
            assertThat(engine.client().statuses(child)).hasSize(3).containsOnly(RunStatus.COMMITTED);
            long lastChildCommit = events.stream()
                    .filter(e -> e.type() == EventType.COMMITTED && e.saga().startsWith("many-sagas-")
                            && !e.saga().equals("many-sagas-root-handler"))
                    .mapToLong(Event::id).max().orElseThrow();
            Event after = events.stream().filter(e -> "after".equals(e.step())).findFirst().orElseThrow();
            assertThat(after.id()).isGreaterThan(lastChildCommit);
            assertThat(events).filteredOn(e -> e.type() == EventType.SEEN).extracting(Event::saga)
                    .containsExactlyInAnyOrder("many-sagas-root-handler", "many-sagas-billing", "many-sagas-crm",
                            "many-sagas-mail");
            Invariants.assertAll(events);
        }
    }

    @Test
    void parent_step_waits_for_every_message_it_launched(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("many-messages-root", Empty.class);
        Topic<Item> itemTopic = Topic.of("many-messages-item", Item.class);
        Topic<Item> auditTopic = Topic.of("many-messages-audit", Item.class);
        Map<Integer, Boolean> itemsDone = new ConcurrentHashMap<>();
        AtomicReference<Map<Integer, Boolean>> seenByNextStep = new AtomicReference<>();
        Saga<Empty> root = Saga.on(rootTopic, "many-messages-root-handler")
                .step("fan-out", step -> {
                    for (int i = 0; i < 5; i++) {
                        step.launch(itemTopic, new Item(i));
                    }
                    step.launch(auditTopic, new Item(99));
                })
                .step("fan-in", step -> seenByNextStep.set(Map.copyOf(itemsDone)))
                .build();
        Saga<Item> items = Saga.on(itemTopic, "many-messages-item-handler")
                .step("handle", step -> itemsDone.put(step.payload().index(), true))
                .build();
        Saga<Item> audit = Saga.on(auditTopic, "many-messages-audit-handler")
                .step("handle", step -> itemsDone.put(step.payload().index(), true))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, items, audit).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            assertThat(seenByNextStep.get()).containsOnlyKeys(0, 1, 2, 3, 4, 99);
            List<Event> events = engine.client().events(id);
            assertThat(events).filteredOn(e -> e.type() == EventType.EMITTED && "fan-out".equals(e.step()))
                    .hasSize(6);
            assertThat(events).filteredOn(e -> e.type() == EventType.COMMITTED).hasSize(7);
            Invariants.assertAll(events);
        }
    }

    @Test
    void a_chain_deeper_than_the_worker_count_completes_because_waiting_runs_hold_no_worker(DataSource dataSource) {
        int depth = 6;
        Topic<Level> topic = Topic.of("deep-chain", Level.class);
        List<Integer> unwound = Collections.synchronizedList(new ArrayList<>());
        Saga<Level> chain = Saga.on(topic, "deep-chain-handler")
                .step("descend", step -> {
                    if (step.payload().remaining() > 0) {
                        step.launch(topic, new Level(step.payload().remaining() - 1));
                    }
                })
                .step("unwind", step -> unwound.add(step.payload().remaining()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(chain).start()) {
            MessageId id = engine.client().launch(topic, new Level(depth - 1));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            // the deepest run unwinds first, the root last: each step waited for the whole chain below it
            assertThat(unwound).containsExactly(0, 1, 2, 3, 4, 5);
            List<Event> events = engine.client().events(id);
            int deepest = events.stream().mapToInt(e -> e.lineage().depth()).max().orElseThrow();
            assertThat(deepest).isEqualTo(depth + 1);
            assertThat(events).filteredOn(e -> e.type() == EventType.COMMITTED).hasSize(depth);
            Invariants.assertAll(events);
        }
    }

    @Test
    void many_levels_of_several_sagas_and_messages_all_respect_the_barrier(DataSource dataSource) {
        Topic<Level> topic = Topic.of("tree", Level.class);
        StepRecorder recorder = new StepRecorder();
        List<Saga<Level>> sagas = new ArrayList<>();
        for (String name : List.of("tree-a", "tree-b")) {
            sagas.add(Saga.on(topic, name)
                    .step("branch", step -> {
                        recorder.record(step);
                        if (step.payload().remaining() > 0) {
                            step.launch(topic, new Level(step.payload().remaining() - 1));
                            step.launch(topic, new Level(step.payload().remaining() - 1));
                        }
                    })
                    .step("join", recorder::record)
                    .build());
        }
        try (CoopEngine engine = Coop.engine(dataSource).workers(4).register(sagas.toArray(Saga[]::new)).start()) {
            MessageId id = engine.client().launch(topic, new Level(3));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            // 2 sagas per message, 2 messages per step: 2 + 8 + 32 + 128 runs
            int runs = 2 + 8 + 32 + 128;
            List<Event> events = engine.client().events(id);
            assertThat(events).filteredOn(e -> e.type() == EventType.COMMITTED).hasSize(runs);
            assertThat(recorder.distinct()).isEqualTo(2 * runs);
            recorder.assertEachStepRanOnce();
            Invariants.assertAll(events);
        }
    }

    @Test
    void the_step_context_describes_the_run_it_belongs_to(DataSource dataSource) {
        Topic<Item> topic = Topic.of("context-described", Item.class);
        List<String> seen = new CopyOnWriteArrayList<>();
        AtomicReference<UUID> runId = new AtomicReference<>();
        AtomicReference<Lineage> lineage = new AtomicReference<>();
        AtomicReference<MessageId> messageId = new AtomicReference<>();
        Saga<Item> saga = Saga.on(topic, "context-described-handler")
                .step("first", step -> {
                    runId.set(step.runId());
                    lineage.set(step.lineage());
                    messageId.set(step.messageId());
                    seen.add(step.saga() + "/" + step.step() + "/" + step.payload().index() + "/" + step.engineId());
                })
                .step("second", step -> {
                    assertThat(step.runId()).isEqualTo(runId.get());
                    assertThat(step.lineage()).isEqualTo(lineage.get());
                    seen.add(step.saga() + "/" + step.step() + "/" + step.payload().index() + "/" + step.engineId());
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Item(7));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            assertThat(seen).containsExactly("context-described-handler/first/7/" + engine.id(),
                    "context-described-handler/second/7/" + engine.id());
            assertThat(messageId.get()).isEqualTo(id);
            assertThat(lineage.get().ids()).containsExactly(id.value(), runId.get());
            assertThat(lineage.get().last()).isEqualTo(runId.get());
            assertThat(engine.client().events(id).get(1).lineage()).isEqualTo(lineage.get());
        }
    }

    @Test
    void a_message_launched_on_the_global_scope_is_not_awaited_and_starts_a_new_hierarchy(DataSource dataSource) {
        Topic<Empty> parentTopic = Topic.of("global-scope-parent", Empty.class);
        Topic<Empty> independentTopic = Topic.of("global-scope-independent", Empty.class);
        StepGate gate = new StepGate();
        AtomicReference<MessageId> launched = new AtomicReference<>();
        Saga<Empty> parent = Saga.on(parentTopic, "global-scope-parent-handler")
                .step("launch", step -> launched.set(step.launchOnGlobalScope(independentTopic, new Empty())))
                .step("after", step -> {
                })
                .build();
        Saga<Empty> independent = Saga.on(independentTopic, "global-scope-independent-handler")
                .step("held", step -> gate.pass())
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(parent, independent).start()) {
            MessageId id = engine.client().launch(parentTopic, new Empty());
            gate.awaitArrivals(1, WAIT);
            // the independent run is held in its step, yet the parent finishes
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(engine.client().statuses(launched.get())).containsExactly(RunStatus.RUNNABLE);
            gate.open();
            assertThat(engine.client().awaitCompletion(launched.get(), WAIT)).isEqualTo(Outcome.COMMITTED);

            List<Event> independentLog = engine.client().events(launched.get());
            Event emitted = independentLog.getFirst();
            assertThat(emitted.type()).isEqualTo(EventType.EMITTED);
            assertThat(emitted.saga()).isEqualTo("global-scope-parent-handler");
            assertThat(emitted.step()).isEqualTo("launch");
            assertThat(emitted.lineage().ids()).containsExactly(launched.get().value());
            Event seen = independentLog.get(1);
            assertThat(seen.lineage().depth()).isEqualTo(2);
            assertThat(seen.lineage().root()).isEqualTo(launched.get().value());
            // the parent's own hierarchy does not contain the independent run
            assertThat(engine.client().events(id)).extracting(Event::saga)
                    .doesNotContain("global-scope-independent-handler");
            Invariants.assertAll(CoopTables.of(dataSource).allEvents());
        }
    }

    @Test
    void a_step_launching_on_a_topic_without_sagas_continues_at_once(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("unhandled-child-root", Empty.class);
        Topic<Empty> nobodyTopic = Topic.of("unhandled-child-nobody-listens", Empty.class);
        AtomicReference<MessageId> child = new AtomicReference<>();
        Saga<Empty> root = Saga.on(rootTopic, "unhandled-child-root-handler")
                .step("launch", step -> child.set(step.launch(nobodyTopic, new Empty())))
                .step("after", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(engine.client().statuses(child.get())).isEmpty();
            assertThat(engine.client().awaitCompletion(child.get(), WAIT)).isEqualTo(Outcome.UNHANDLED);
            assertThat(EventLog.rows(engine.client().events(id))).containsExactly(
                    "EMITTED - -",
                    "SEEN unhandled-child-root-handler -",
                    "EMITTED unhandled-child-root-handler launch",
                    "SUSPENDED unhandled-child-root-handler launch",
                    "SUSPENDED unhandled-child-root-handler after",
                    "COMMITTED unhandled-child-root-handler after");
        }
    }

    @Test
    void names_are_data_not_sql(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("names:are/data_v1.0-x", Empty.class);
        String stepName = "step 'one'; DROP TABLE coop.event; -- \"quoted\" 步骤";
        Saga<Empty> saga = Saga.on(topic, "names:are/data.handler_v1-x")
                .step(stepName, step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(EventLog.rows(engine.client().events(id)).stream().collect(Collectors.toList()))
                    .containsExactly("EMITTED - -",
                            "SEEN names:are/data.handler_v1-x -",
                            "SUSPENDED names:are/data.handler_v1-x " + stepName,
                            "COMMITTED names:are/data.handler_v1-x " + stepName);
        }
    }
}
