package dev.coop;

import static dev.coop.CountOffRounds.child;
import static dev.coop.CountOffRounds.count;
import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.Invariants;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The launches of a round's steps are written with one statement for the round, and each step's barrier and advance
 * then go with the round's other advances: every parent waits for exactly the children it launched, as alone. A step
 * whose launches cannot be written as asked aborts the round; it is settled alone as it would have been, and the
 * others' launches are written once. Rounds of 8 are forced as in {@link StepRoundTest}:
 * the parents are launched before the engine (one worker, at most 8 runs per transaction) starts.
 */
class StepRoundLaunchTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = StepRoundTest.WAIT;

    /** The round's emit, a step's own emits (of several messages, of one), and a run's own advance. */
    static final String EMIT_ROUND = "WITH origin AS";
    static final String EMIT = "u.okey, u.n";
    static final String EMIT_ONE = "VALUES (?::uuid, ?, ?::jsonb";
    static final String ADVANCE_ONE = "WITH events AS (";

    /**
     * A saga whose first step launches two children on {@code child} and one message on {@code global}'s topic on the
     * global scope (its payload "odd": one child on {@code odd} instead); its second step does nothing.
     */
    static Saga<String> parent(String name, Topic<String> child, Topic<String> global, Topic<String> odd) {
        return Saga.on(Topic.of(name, String.class), name)
                .step("launch", step -> {
                    if (step.payload().equals("odd")) {
                        step.launch(odd, "odd");
                        return;
                    }
                    step.launch(child, step.payload() + "-a");
                    step.launch(child, step.payload() + "-b");
                    step.launchOnGlobalScope(global, step.payload());
                })
                .step("after", step -> {
                })
                .build();
    }

    /** Registers {@code sagas} (an engine started and closed), then launches {@code payloads} on {@code root}. */
    static Map<String, MessageId> launchBeforeStart(DataSource dataSource, Saga<String> root, List<String> payloads,
            Saga<?>... sagas) {
        CoopEngine.Builder builder = Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK);
        for (Saga<?> saga : sagas) {
            builder.register(saga);
        }
        builder.start().close();
        CoopClient client = StepRoundTest.client(dataSource);
        Map<String, MessageId> ids = new LinkedHashMap<>();
        payloads.forEach(p -> ids.put(p, client.launch(root.topic(), p)));
        return ids;
    }

    static CoopEngine.Builder engine(DataSource dataSource, List<String> sent, StepRoundTest.Rounds rounds) {
        return Coop.engine(RecordingDataSource.of(dataSource, sent)).workers(1).maxRunsPerTransaction(8)
                .pollInterval(Duration.ofMillis(100)).clock(StepRoundTest.CLOCK).listener(rounds);
    }

    static List<String> payloads(String odd) {
        List<String> payloads = new java.util.ArrayList<>();
        for (int i = 0; i < 7; i++) {
            payloads.add("p" + i);
        }
        payloads.add(3, odd);
        return payloads;
    }

    @Test
    void in_a_round_of_8_the_steps_launches_are_one_statement_and_each_parent_waits_for_its_own(
            DataSource dataSource) throws Exception {
        Saga<String> child = child("rl-child");
        Saga<String> global = child("rl-global");
        Saga<String> parent = parent("rl-parent", child.topic(), global.topic(), child.topic());
        Map<String, MessageId> ids = launchBeforeStart(dataSource, parent, payloads("p7"), parent, child, global);
        List<String> sent = new CopyOnWriteArrayList<>();
        StepRoundTest.Rounds rounds = new StepRoundTest.Rounds();
        try (CoopEngine engine = engine(dataSource, sent, rounds).register(parent).start()) {
            Await.until("the parents wait for their children", WAIT, () -> count(dataSource,
                    "SELECT count(*) FROM coop.run WHERE saga = ? AND status = 'WAITING'", parent.name()) == 8);
        }
        assertThat(rounds.committed).as("one round of 8").hasSize(1).allMatch(r -> r[0] == 8 && r[1] == 8);
        assertThat(sent).as("the round's launches in one statement").filteredOn(s -> s.contains(EMIT_ROUND))
                .hasSize(1);
        assertThat(sent).as("no step's own emit").noneMatch(s -> s.contains(EMIT) || s.contains(EMIT_ONE));
        assertThat(sent).as("no run's own advance: they went with the round's").noneMatch(
                s -> s.contains(ADVANCE_ONE));
        assertThat(count(dataSource, "SELECT count(*) FROM coop.run p WHERE p.saga = ? AND p.pending_children = 2"
                + " AND (SELECT count(*) FROM coop.run c WHERE c.parent_id = p.id) = 2", parent.name()))
                .as("each parent waits for the two children it launched").isEqualTo(8);
        assertThat(count(dataSource, "SELECT count(*) FROM coop.run WHERE saga = ? AND parent_id IS NULL",
                global.name())).as("one run on the global scope per parent").isEqualTo(8);
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).clock(StepRoundTest.CLOCK).register(parent)
                .register(child).register(global).start()) {
            for (MessageId id : ids.values()) {
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(engine.client().events(id)).filteredOn(e -> e.type() == EventType.EMITTED
                        && "launch".equals(e.step())).as("two children launched once").hasSize(2);
            }
            Await.until("every run finished", WAIT, () -> count(dataSource,
                    "SELECT count(*) FROM coop.run WHERE finished_at IS NULL AND saga = ANY(?)",
                    new String[]{parent.name(), child.name(), global.name()}) == 0);
        }
        Invariants.assertAll(CoopTables.of(dataSource).allEvents());
    }

    @Test
    void a_held_launch_onto_a_topic_nobody_handles_fails_only_its_run_and_the_others_launch_once(
            DataSource dataSource) throws Exception {
        Saga<String> child = child("rl-strict-child");
        Saga<String> global = child("rl-strict-global");
        Saga<String> parent = parent("rl-strict", child.topic(), global.topic(),
                Topic.of("rl-nobody", String.class));
        Map<String, MessageId> ids = launchBeforeStart(dataSource, parent, payloads("odd"), parent, child, global);
        List<String> sent = new CopyOnWriteArrayList<>();
        try (CoopEngine engine = engine(dataSource, sent, new StepRoundTest.Rounds()).requireHandlers(true)
                .register(parent).register(child).register(global).start()) {
            assertThat(engine.client().awaitCompletion(ids.get("odd"), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(engine.client().events(ids.get("odd"))).filteredOn(e -> e.type() == EventType.ROLLING_BACK)
                    .singleElement().extracting(Event::exception).asString()
                    .contains("No saga is registered for topic 'rl-nobody'");
            assertOthersLaunchedOnce(engine.client(), ids, "odd");
        }
        assertThat(sent).as("the launches were held for the round").anyMatch(s -> s.contains(EMIT_ROUND));
        assertThat(count(dataSource, "SELECT count(*) FROM coop.message WHERE topic = ?", "rl-nobody")).isZero();
        Invariants.assertAll(CoopTables.of(dataSource).allEvents());
    }

    /** The messages whose parent's strategy fails when it decides how to wait. */
    static final Set<MessageId> FAILING = ConcurrentHashMap.newKeySet();

    /**
     * A strategy of the user's decides on a step's launches before the round's next step runs (they are not held): one
     * that fails aborts the round before the later steps ran, and only the steps before it run again.
     */
    @Test
    void a_saga_with_its_own_strategy_launches_at_once_and_a_failing_strategy_fails_only_its_run(DataSource dataSource)
            throws Exception {
        Saga<String> child = child("rl-strategy-child");
        Saga<String> global = child("rl-strategy-global");
        CooperationStrategy failing = new CooperationStrategy() {
            @Override
            public BarrierDecision resumeHappyPath(Barrier barrier) {
                if (FAILING.contains(barrier.run().message())) {
                    throw new IllegalStateException("this strategy fails");
                }
                return BarrierDecision.WAIT;
            }
        };
        Saga<String> parent = Saga.on(Topic.of("rl-strategy", String.class), "rl-strategy")
                .strategy(failing)
                .step("launch", step -> {
                    step.launch(child.topic(), step.payload() + "-a");
                    step.launch(child.topic(), step.payload() + "-b");
                    step.launchOnGlobalScope(global.topic(), step.payload());
                })
                .step("after", step -> {
                })
                .build();
        Map<String, MessageId> ids = launchBeforeStart(dataSource, parent, payloads("odd"), parent, child, global);
        FAILING.add(ids.get("odd"));
        List<String> sent = new CopyOnWriteArrayList<>();
        try (CoopEngine engine = engine(dataSource, sent, new StepRoundTest.Rounds()).register(parent)
                .register(child).register(global).start()) {
            assertThat(engine.client().awaitCompletion(ids.get("odd"), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(engine.client().events(ids.get("odd"))).filteredOn(e -> e.type() == EventType.ROLLING_BACK)
                    .singleElement().extracting(Event::exception).asString().contains("this strategy fails");
            assertOthersLaunchedOnce(engine.client(), ids, "odd");
        }
        assertThat(sent).as("no launch was held for the round").noneMatch(s -> s.contains(EMIT_ROUND));
        assertThat(strings(dataSource, "SELECT topic || ':' || payload::text FROM coop.message"
                + " WHERE topic LIKE ? AND payload::text LIKE '\"odd%' ORDER BY 1", "rl-strategy%"))
                .as("nothing the failed step launched is durable").containsExactly("rl-strategy:\"odd\"");
        Invariants.assertAll(CoopTables.of(dataSource).allEvents());
    }

    static List<String> strings(DataSource dataSource, String sql, String value) throws java.sql.SQLException {
        try (java.sql.Connection c = dataSource.getConnection();
                java.sql.PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, value);
            List<String> result = new java.util.ArrayList<>();
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    result.add(rs.getString(1));
                }
            }
            return result;
        }
    }

    /**
     * The round's emit never drops a message silently: a launch whose idempotency key another message holds (a step
     * that launches with a key looks the key up first, so in the engine its launches are never held; the statement
     * still says so) is named with {@code KEY_TAKEN}, while the other steps' launches are written and counted.
     */
    @Test
    void the_rounds_emit_names_a_launch_whose_key_was_taken_and_counts_the_others(DataSource dataSource)
            throws Exception {
        Saga<String> child = child("rl-key-child");
        Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK).register(child).start().close();
        CoopClient client = StepRoundTest.client(dataSource);
        client.launch(child.topic(), "holder", LaunchOptions.none().idempotencyKey("k"));
        dev.coop.internal.store.Store store = new dev.coop.internal.store.Store(
                new dev.coop.internal.store.SchemaName("coop"), dev.coop.internal.store.Time.DATABASE);
        java.util.UUID[] runs = {java.util.UUID.randomUUID(), java.util.UUID.randomUUID()};
        List<dev.coop.internal.store.RoundEmits.Launch> launches = List.of(
                launch(runs[0], List.of(emission(child, "a", null), emission(child, "b", null))),
                launch(runs[1], List.of(emission(child, "c", "k"))));
        try (java.sql.Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            dev.coop.internal.store.RoundEmits.Written written = store.emitRound(c, "rl-key-parent", "test",
                    launches);
            c.rollback();
            assertThat(written.launches().get(0).children()).isEqualTo(2);
            assertThat(written.launches().get(0).created()).containsExactly(Map.entry(child.name(), 2));
            assertThat(written.launches().get(0).refused()).isNull();
            assertThat(written.launches().get(1).children()).isZero();
            assertThat(written.launches().get(1).refused()).isInstanceOf(java.sql.SQLException.class)
                    .hasMessageContaining("The idempotency key 'k' of topic 'rl-key-child' was taken")
                    .extracting(e -> ((java.sql.SQLException) e).getSQLState())
                    .isEqualTo(dev.coop.internal.store.Store.KEY_TAKEN);
        }
    }

    private static dev.coop.internal.store.RoundEmits.Launch launch(java.util.UUID run,
            List<dev.coop.internal.store.Emission> scoped) {
        return new dev.coop.internal.store.RoundEmits.Launch(new java.util.UUID[]{java.util.UUID.randomUUID(), run},
                run, 0, "launch", scoped, List.of());
    }

    private static dev.coop.internal.store.Emission emission(Saga<String> saga, String payload, String key) {
        return new dev.coop.internal.store.Emission(java.util.UUID.randomUUID(), saga.topic().name(),
                "\"" + payload + "\"", null, null, key, 0, null);
    }

    /** Every parent but {@code odd} committed, and launched its two children and its global message once. */
    static void assertOthersLaunchedOnce(CoopClient client, Map<String, MessageId> ids, String odd) {
        for (Map.Entry<String, MessageId> e : ids.entrySet()) {
            if (e.getKey().equals(odd)) {
                continue;
            }
            assertThat(client.awaitCompletion(e.getValue(), WAIT)).as(e.getKey()).isEqualTo(Outcome.COMMITTED);
            assertThat(client.events(e.getValue())).filteredOn(x -> x.type() == EventType.EMITTED
                    && "launch".equals(x.step())).as(e.getKey() + ": its children launched once").hasSize(2);
            assertThat(client.events(e.getValue())).filteredOn(x -> x.type() == EventType.SUSPENDED
                    && "launch".equals(x.step())).as(e.getKey() + ": its step committed once").hasSize(1);
        }
    }
}
