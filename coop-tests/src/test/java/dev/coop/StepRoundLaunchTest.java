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
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Steps that launch in a round: a step whose launches cannot be written as asked, or whose strategy fails on them,
 * aborts the round; it is settled alone as it would have been, and the others' launches are written once. Rounds of 8
 * are forced as in {@link StepRoundTest}: the parents are launched before the engine (one worker, at most 8 runs per
 * transaction) starts.
 */
class StepRoundLaunchTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = StepRoundTest.WAIT;

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

    static CoopEngine.Builder engine(DataSource dataSource) {
        return Coop.engine(dataSource).workers(1).maxRunsPerTransaction(8)
                .pollInterval(Duration.ofMillis(100)).clock(StepRoundTest.CLOCK);
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
    void in_a_round_a_launch_onto_a_topic_nobody_handles_fails_only_its_run_and_the_others_launch_once(
            DataSource dataSource) throws Exception {
        Saga<String> child = child("rl-strict-child");
        Saga<String> global = child("rl-strict-global");
        Saga<String> parent = parent("rl-strict", child.topic(), global.topic(),
                Topic.of("rl-nobody", String.class));
        Map<String, MessageId> ids = launchBeforeStart(dataSource, parent, payloads("odd"), parent, child, global);
        try (CoopEngine engine = engine(dataSource).requireHandlers(true)
                .register(parent).register(child).register(global).start()) {
            assertThat(engine.client().awaitCompletion(ids.get("odd"), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(engine.client().events(ids.get("odd"))).filteredOn(e -> e.type() == EventType.ROLLING_BACK)
                    .singleElement().extracting(Event::exception).asString()
                    .contains("No saga is registered for topic 'rl-nobody'");
            assertOthersLaunchedOnce(engine.client(), ids, "odd");
        }
        assertThat(count(dataSource, "SELECT count(*) FROM coop.message WHERE topic = ?", "rl-nobody")).isZero();
        Invariants.assertAll(CoopTables.of(dataSource).allEvents());
    }

    /** The messages whose parent's strategy fails when it decides how to wait. */
    static final Set<MessageId> FAILING = ConcurrentHashMap.newKeySet();

    /**
     * A strategy that fails when it decides how its run waits for the step's launches aborts the round: only its run
     * fails, and every other step's launches are written once.
     */
    @Test
    void in_a_round_a_strategy_that_fails_on_a_steps_launches_fails_only_its_run(DataSource dataSource)
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
        try (CoopEngine engine = engine(dataSource).register(parent)
                .register(child).register(global).start()) {
            assertThat(engine.client().awaitCompletion(ids.get("odd"), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(engine.client().events(ids.get("odd"))).filteredOn(e -> e.type() == EventType.ROLLING_BACK)
                    .singleElement().extracting(Event::exception).asString().contains("this strategy fails");
            assertOthersLaunchedOnce(engine.client(), ids, "odd");
        }
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
