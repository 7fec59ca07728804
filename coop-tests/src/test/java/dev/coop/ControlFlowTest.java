package dev.coop;

import dev.coop.failure.Failure;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class ControlFlowTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void repeat_runs_a_step_again_with_its_iteration_number_and_waits_for_each_iterations_children(
            DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("loop-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("loop-child", Empty.class);
        List<String> trace = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "loop-root-handler")
                .flowStep("poll", step -> {
                    trace.add("poll " + step.iteration());
                    step.launch(childTopic, new Empty());
                    return step.iteration() < 3 ? Flow.repeat() : Flow.next();
                })
                .step("done", step -> trace.add("done " + step.iteration()))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "loop-child-handler")
                .step("work", step -> trace.add("child"))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            // the barrier holds for every iteration: each child finished before the next iteration started
            assertThat(trace).containsExactly("poll 1", "child", "poll 2", "child", "poll 3", "child", "done 1");
            Invariants.assertAll(engine.client().events(id));
        }
    }

    @Test
    void goto_jumps_forward_skipping_steps_and_back_repeating_them(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("goto", Empty.class);
        List<String> trace = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "goto-handler")
                .flowStep("a", step -> {
                    trace.add("a" + step.iteration());
                    return step.iteration() == 1 ? Flow.goTo("c") : Flow.next();
                })
                .step("b", step -> trace.add("b" + step.iteration()))
                .flowStep("c", step -> {
                    trace.add("c" + step.iteration());
                    return step.iteration() == 1 ? Flow.goTo("a") : Flow.next();
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(trace).containsExactly("a1", "c1", "a2", "b1", "c2");
            assertThat(engine.client().events(id)).filteredOn(e -> e.type() == EventType.SUSPENDED)
                    .extracting(Event::step).containsExactly("a", "c", "a", "b", "c");
        }
    }

    @Test
    void a_failure_mid_loop_compensates_every_executed_iteration_newest_first_with_its_number_and_skips_skipped_steps(
            DataSource dataSource) {
        Topic<Empty> topic = Topic.of("loop-fail", Empty.class);
        List<String> compensated = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "loop-fail-handler")
                .flowStep("start", step -> Flow.goTo("loop"))
                .step("skipped", step -> {
                })
                .compensateWith((step, cause) -> compensated.add("skipped"))
                .flowStep("loop", step -> {
                    if (step.iteration() == 4) {
                        throw new IllegalStateException("fails in iteration 4");
                    }
                    return Flow.repeat();
                })
                .compensateWith((step, cause) -> compensated.add("loop " + step.iteration()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(compensated).containsExactly("loop 3", "loop 2", "loop 1");
            String tree = dev.coop.render.Renderers.text().render(engine.client().tree(id));
            assertThat(tree).contains("loop #2  step", "loop #3  step", "loop #3  compensation",
                    "loop #2  compensation").doesNotContain("skipped");
        }
    }

    /**
     * What a claim reads of a run does not grow with a loop: the run row (counts per step, no list of instances) and
     * the newest few instances. Measured inside the step, on its own transaction, at iterations 10 and 1,000.
     */
    static int claimedBytes(StepContext<?> step) {
        try (java.sql.PreparedStatement ps = step.connection().prepareStatement("""
                SELECT pg_column_size(r.*) + (SELECT coalesce(sum(pg_column_size(s.*)), 0)::int
                                                FROM (SELECT e.step_seq, e.instance, e.iteration FROM coop.event e
                                                       WHERE e.message_id = r.message_id AND e.saga = r.saga
                                                         AND e.step_seq IS NOT NULL
                                                       ORDER BY e.step_seq DESC LIMIT 8) s)
                  FROM coop.run r WHERE r.id = ?
                """)) {
            ps.setObject(1, step.runId());
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void a_long_loop_reads_as_much_at_its_last_claim_as_at_its_first(DataSource dataSource) {
        int n = 1_000;
        Topic<Empty> topic = Topic.of("loop-long", Empty.class);
        java.util.Map<Integer, Integer> bytes = new java.util.concurrent.ConcurrentHashMap<>();
        Saga<Empty> saga = Saga.on(topic, "loop-long-handler")
                .flowStep("loop", step -> {
                    if (step.iteration() == 10 || step.iteration() == n) {
                        bytes.put(step.iteration(), claimedBytes(step));
                    }
                    return step.iteration() < n ? Flow.repeat() : Flow.next();
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(120))).isEqualTo(Outcome.COMMITTED);
            assertThat(bytes.get(n)).as("bytes read at claim, iteration %d vs 10", n).isEqualTo(bytes.get(10));
        }
    }

    @Test
    void a_looping_run_rolled_back_later_compensates_every_iteration_newest_first(DataSource dataSource) {
        int n = 150;
        Topic<Empty> topic = Topic.of("loop-undo", Empty.class);
        List<Integer> compensated = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "loop-undo-handler")
                .flowStep("loop", step -> step.iteration() < n ? Flow.repeat() : Flow.next())
                .compensateWith((step, cause) -> compensated.add(step.iteration()))
                .step("fail", step -> {
                    throw new IllegalStateException("fails after the loop");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(60))).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(compensated).hasSize(n);
            for (int i = 0; i < n; i++) {
                assertThat(compensated.get(i)).isEqualTo(n - i);
            }
        }
    }

    @Test
    void goto_an_unknown_step_fails_the_step_naming_it(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("goto-unknown", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "goto-unknown-handler")
                .flowStep("a", step -> Flow.goTo("nowhere"))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            Event rollingBack = engine.client().events(id).stream()
                    .filter(e -> e.type() == EventType.ROLLING_BACK).findFirst().orElseThrow();
            assertThat(Failure.fromJson(rollingBack.exception()).message())
                    .contains("returned GoTo('nowhere'), but the saga has no such step; its steps are [a]");
        }
    }
}
