package dev.coop;

import dev.coop.failure.CoopTimeoutException;
import dev.coop.failure.Failure;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.ParkedRun;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Isolation: failures never leak from one run to another, a failing or poisoned run never delays the other runs of its
 * saga, and an {@code Error} from user code fails only its step.
 */
class IsolationTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Job(int index, boolean fail) {
    }

    @Test
    void a_child_failure_of_one_run_never_reaches_another_run_of_the_same_saga(DataSource dataSource) {
        Topic<Job> rootTopic = Topic.of("leak-root", Job.class);
        Topic<Job> childTopic = Topic.of("leak-child", Job.class);
        Map<Integer, AtomicInteger> handlerCalls = new ConcurrentHashMap<>();
        List<Integer> secondSteps = new CopyOnWriteArrayList<>();
        Saga<Job> root = Saga.on(rootTopic, "leak-root-saga")
                .step("r0", step -> step.launch(childTopic, step.payload()))
                .onChildFailure((step, failure) -> {
                    handlerCalls.computeIfAbsent(step.payload().index(), i -> new AtomicInteger()).incrementAndGet();
                    if (step.payload().index() % 4 == 0) {
                        throw failure; // some failing runs roll back, the others swallow
                    }
                })
                .step("r1", step -> secondSteps.add(step.payload().index()))
                .build();
        Saga<Job> child = Saga.on(childTopic, "leak-child-saga")
                .step("c0", step -> {
                    if (step.payload().fail()) {
                        throw new IllegalStateException("child " + step.payload().index() + " fails");
                    }
                })
                .build();

        int runs = 24;
        Map<Integer, Outcome> outcomes = new ConcurrentHashMap<>();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            List<MessageId> ids = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                ids.add(engine.client().launch(rootTopic, new Job(i, i % 2 == 0)));
            }
            for (int i = 0; i < runs; i++) {
                outcomes.put(i, engine.client().awaitCompletion(ids.get(i), WAIT));
            }
        }
        for (int i = 0; i < runs; i++) {
            boolean failed = i % 2 == 0;
            Outcome expected = failed && i % 4 == 0 ? Outcome.ROLLED_BACK : Outcome.COMMITTED;
            assertThat(outcomes.get(i)).as("run %d", i).isEqualTo(expected);
            assertThat(handlerCalls.getOrDefault(i, new AtomicInteger()).get()).as("handler calls of run %d", i)
                    .isEqualTo(failed ? 1 : 0);
            assertThat(secondSteps.contains(i)).as("run %d went on", i).isEqualTo(expected == Outcome.COMMITTED);
        }
    }

    @Test
    void a_run_that_always_fails_and_parks_does_not_delay_the_other_runs_of_its_saga(DataSource dataSource) {
        Topic<Job> topic = Topic.of("poison-retry", Job.class);
        AtomicInteger poisonAttempts = new AtomicInteger();
        Saga<Job> saga = Saga.on(topic, "poison-retry-saga")
                .step("work", step -> {
                    if (step.payload().fail()) {
                        poisonAttempts.incrementAndGet();
                        throw new IOException("poison");
                    }
                })
                .retry(RetryPolicy.attempts(20).initialDelay(Duration.ofMillis(5)).multiplier(1.5)
                        .maxDelay(Duration.ofMillis(40)).parkWhenExhausted())
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId poison = client.launch(topic, new Job(-1, true));
            Await.until("the poison run to fail a few times", WAIT, () -> poisonAttempts.get() >= 3);
            List<MessageId> healthy = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                healthy.add(client.launch(topic, new Job(i, false)));
            }
            assertAllCommitWithin(client, healthy, Duration.ofSeconds(5), "beside a run that always fails");
            Await.until("the poison run to park", WAIT,
                    () -> client.statuses(poison).equals(List.of(RunStatus.PARKED)));
        }
    }

    @Test
    void a_run_the_engine_cannot_process_does_not_block_the_other_runs_of_its_saga(DataSource dataSource)
            throws Exception {
        Topic<Job> topic = Topic.of("poison-corrupt", Job.class);
        List<Integer> done = new CopyOnWriteArrayList<>();
        Saga<Job> saga = Saga.on(topic, "poison-corrupt-saga")
                .step("work", step -> done.add(step.payload().index()))
                .build();
        Coop.engine(dataSource).workers(1).register(saga).start().close();
        CoopClient client = Coop.client(dataSource);
        MessageId poison = client.launch(topic, new Job(-1, false));
        // a row the engine cannot make sense of (a participant in another language wrote a bad rollback cause)
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                WITH r AS (
                  UPDATE coop.run SET phase = 'ROLLBACK', rollback_stage = 'CHILDREN', rollback_seq = 0, steps_done = 1,
                         step_index = 1, iterations = '{1}', rollback_cause = '"not a failure document"'::jsonb
                   WHERE message_id = ? RETURNING message_id, saga, lineage, root_id
                )
                INSERT INTO coop.event (message_id, type, saga, step, lineage, step_seq, instance, iteration, root_id)
                SELECT message_id, 'SUSPENDED', saga, 'work', lineage, 0, 0, 1, root_id FROM r
                """)) {
            ps.setObject(1, poison.value());
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
        List<MessageId> healthy = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            healthy.add(client.launch(topic, new Job(i, false)));
        }
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(saga).start()) {
            assertAllCommitWithin(engine.client(), healthy, Duration.ofSeconds(5),
                    "beside a run the engine cannot process");
            // and the bad run is set aside for an operator, with the reason
            ParkedRun parked = Await.value("the bad run to park", Duration.ofSeconds(5),
                    () -> engine.client().parkedRuns(100).stream().filter(p -> p.messageId().equals(poison))
                            .findFirst().orElse(null));
            assertThat(parked.failure().message()).isNotBlank();
        }
    }

    @Test
    void an_error_thrown_by_user_code_fails_its_step_and_the_engine_keeps_working(DataSource dataSource) {
        Topic<Job> topic = Topic.of("error-user", Job.class);
        Topic<Job> childTopic = Topic.of("error-user-child", Job.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Job> saga = Saga.on(topic, "error-user-saga")
                .step("s0", step -> {
                    switch (step.payload().index()) {
                        case 1 -> throw new AssertionError("assertion in a step");
                        case 2 -> recurse(0);
                        case 3 -> step.launch(childTopic, step.payload());
                        default -> ran.add("s0 of " + step.payload().index());
                    }
                })
                .compensateWith((step, cause) -> {
                    if (step.payload().index() == 4) {
                        throw new NoClassDefFoundError("in a compensation");
                    }
                })
                .onChildFailure((step, failure) -> {
                    throw new ExceptionInInitializerError("in a child failure handler");
                })
                .step("s1", step -> {
                    if (step.payload().index() == 4) {
                        throw new IllegalStateException("s1 fails so that s0 is compensated");
                    }
                    ran.add("s1 of " + step.payload().index());
                })
                .build();
        Saga<Job> child = Saga.on(childTopic, "error-user-child-saga")
                .step("c0", step -> {
                    throw new IllegalStateException("child fails");
                })
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(saga, child).start()) {
            CoopClient client = engine.client();
            MessageId assertion = client.launch(topic, new Job(1, false));
            MessageId overflow = client.launch(topic, new Job(2, false));
            MessageId inHandler = client.launch(topic, new Job(3, false));
            MessageId inCompensation = client.launch(topic, new Job(4, false));
            assertThat(client.awaitCompletion(assertion, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.awaitCompletion(overflow, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.awaitCompletion(inHandler, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.awaitCompletion(inCompensation, WAIT)).isEqualTo(Outcome.ROLLBACK_FAILED);
            assertThat(type(client, assertion, EventType.ROLLING_BACK)).isEqualTo("java.lang.AssertionError");
            assertThat(type(client, overflow, EventType.ROLLING_BACK)).isEqualTo("java.lang.StackOverflowError");
            assertThat(type(client, inHandler, EventType.ROLLING_BACK))
                    .isEqualTo("java.lang.ExceptionInInitializerError");
            assertThat(type(client, inCompensation, EventType.ROLLBACK_FAILED))
                    .isEqualTo("java.lang.NoClassDefFoundError");

            // both workers are still there
            List<MessageId> later = new ArrayList<>();
            for (int i = 10; i < 20; i++) {
                later.add(client.launch(topic, new Job(i, false)));
            }
            for (MessageId id : later) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            assertThat(ran).filteredOn(r -> r.startsWith("s1 of")).hasSize(10);
        }
    }

    @Test
    void a_run_whose_saga_lost_steps_in_a_deploy_parks_with_a_clear_reason(DataSource dataSource) {
        Topic<Job> topic = Topic.of("deploy-shrunk", Job.class);
        Topic<Job> childTopic = Topic.of("deploy-shrunk-child", Job.class);
        Saga<Job> v1 = Saga.on(topic, "deploy-shrunk-saga")
                .step("s0", step -> {
                })
                .step("s1", step -> step.launch(childTopic, step.payload()))
                .step("s2", step -> {
                })
                .build();
        Saga<Job> v2 = Saga.on(topic, "deploy-shrunk-saga")
                .step("s0", step -> {
                })
                .build();
        Saga<Job> child = Saga.on(childTopic, "deploy-shrunk-child-saga").step("c0", step -> {
        }).build();
        Coop.engine(dataSource).workers(1).register(child).start().close();
        MessageId id;
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(v1).start()) {
            id = engine.client().launch(topic, new Job(1, false));
            Await.until("the run to wait after s1", WAIT,
                    () -> engine.client().statuses(id).equals(List.of(RunStatus.WAITING)));
        }
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(v2, child).start()) {
            ParkedRun parked = Await.value("the run to park", WAIT, () -> engine.client().parkedRuns(100).stream()
                    .filter(p -> p.messageId().equals(id)).findFirst().orElse(null));
            assertThat(parked.failure().message()).contains("deploy-shrunk-saga", "1 steps");
            assertThat(parked.stepIndex()).isEqualTo(2);
        }
    }

    @Test
    void a_run_whose_next_step_was_removed_in_a_deploy_parks_instead_of_committing_without_it(
            DataSource dataSource) {
        Topic<Job> topic = Topic.of("deploy-removed", Job.class);
        Topic<Job> childTopic = Topic.of("deploy-removed-child", Job.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Job> v1 = Saga.on(topic, "deploy-removed-saga")
                .step("reserve", step -> step.launch(childTopic, step.payload()))
                .step("charge", step -> ran.add("charge"))
                .build();
        Saga<Job> v2 = Saga.on(topic, "deploy-removed-saga")
                .step("reserve", step -> step.launch(childTopic, step.payload()))
                .build();
        Saga<Job> child = Saga.on(childTopic, "deploy-removed-child-saga").step("c0", step -> {
        }).build();
        Coop.engine(dataSource).workers(1).register(child).start().close();
        MessageId id;
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(v1).start()) {
            id = engine.client().launch(topic, new Job(1, false));
            Await.until("the run to wait after reserve", WAIT,
                    () -> engine.client().statuses(id).equals(List.of(RunStatus.WAITING)));
        }
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(v2, child).start()) {
            Await.until("the run to move on", WAIT,
                    () -> !engine.client().statuses(id).equals(List.of(RunStatus.WAITING)));
            Await.until("the run to settle", WAIT,
                    () -> engine.client().statuses(id).stream().noneMatch(s -> s == RunStatus.RUNNABLE));
            String log = EventLog.table(engine.client().events(id));
            // the run was about to execute "charge", which no longer exists: it must not commit as if it had run
            assertThat(engine.client().statuses(id)).as(log).containsExactly(RunStatus.PARKED);
        }
        assertThat(ran).isEmpty();
    }

    // --- helpers

    static void assertAllCommitWithin(CoopClient client, List<MessageId> ids, Duration budget, String what) {
        long deadline = System.nanoTime() + budget.toNanos();
        int finished = 0;
        for (MessageId id : ids) {
            Duration left = Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime()));
            try {
                assertThat(client.awaitCompletion(id, left)).isEqualTo(Outcome.COMMITTED);
                finished++;
            } catch (CoopTimeoutException e) {
                throw new AssertionError("Healthy runs " + what + " were held up: only " + finished + " of "
                        + ids.size() + " finished within " + budget, e);
            }
        }
    }

    static int recurse(int depth) {
        return recurse(depth + 1) + 1;
    }

    static String type(CoopClient client, MessageId id, EventType type) {
        return client.events(id).stream().filter(e -> e.type() == type && e.messageId().equals(id)).findFirst()
                .map(e -> Failure.fromJson(e.exception()).type()).orElse(null);
    }
}
