package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Order;
import dev.coop.failure.TaskRefusedException;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Completions racing each other, a cancellation, many tasks in one step: exactly one settlement wins. */
class ExternalTaskRaceTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(60);
    static final Map<String, String> tokens = new ConcurrentHashMap<>();

    @Test
    void concurrent_completions_settle_the_task_once_and_the_others_are_told(DataSource dataSource) throws Exception {
        Topic<Order> topic = Topic.of("task-race", Order.class);
        Saga<Order> saga = Saga.on(topic, "task-race-saga")
                .step("ask", step -> tokens.put(step.payload().id(), step.openTask("approval", step.payload()).token()))
                .step("after", step -> step.setResult(step.taskResult("approval", String.class)))
                .build();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            for (boolean sameResult : new boolean[]{true, false}) {
                String order = "race-" + sameResult;
                MessageId id = client.launch(topic, new Order(order, 1));
                String token = Await.value("token", WAIT, () -> tokens.get(order));
                Await.until("open", WAIT, () -> client.externalTask(token).isPresent());
                CountDownLatch start = new CountDownLatch(1);
                List<Future<Object>> calls = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    String result = sameResult ? "yes" : "yes-" + i;
                    calls.add(pool.submit(() -> {
                        start.await();
                        try {
                            return client.complete(token, result);
                        } catch (TaskRefusedException e) {
                            return e;
                        }
                    }));
                }
                start.countDown();
                List<Object> outcomes = new ArrayList<>();
                for (Future<Object> call : calls) {
                    outcomes.add(call.get(30, TimeUnit.SECONDS));
                }
                assertThat(outcomes).filteredOn(o -> o == TaskOutcome.SETTLED).hasSize(1);
                if (sameResult) {
                    assertThat(outcomes).filteredOn(o -> o == TaskOutcome.ALREADY_SETTLED).hasSize(7);
                } else {
                    assertThat(outcomes).filteredOn(o -> o instanceof TaskRefusedException).hasSize(7);
                }
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(client.result(id, String.class)).startsWith("yes");
                dev.coop.test.Invariants.assertAll(client.events(id));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void a_completion_racing_a_cancellation_either_wins_and_is_compensated_or_is_refused(DataSource dataSource)
            throws Exception {
        Topic<Order> topic = Topic.of("task-cancel-race", Order.class);
        Topic<Order> undo = Topic.of("task-cancel-race-undo", Order.class);
        AtomicInteger undone = new AtomicInteger();
        Saga<Order> saga = Saga.on(topic, "task-cancel-race-saga")
                .step("ask", step -> tokens.put(step.payload().id(), step.openTask("approval", step.payload(),
                        TaskOptions.none().compensation(undo, step.payload())).token()))
                .build();
        Saga<Order> undoer = Saga.on(undo, "task-cancel-race-undoer")
                .step("undo", step -> undone.incrementAndGet())
                .build();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (CoopEngine engine = Coop.engine(dataSource).register(saga, undoer).start()) {
            CoopClient client = engine.client();
            int completedWins = 0;
            for (int round = 0; round < 6; round++) {
                String order = "cancel-race-" + round;
                MessageId id = client.launch(topic, new Order(order, 1));
                String token = Await.value("token", WAIT, () -> tokens.get(order));
                Await.until("open", WAIT, () -> client.externalTask(token).isPresent());
                CountDownLatch start = new CountDownLatch(1);
                Future<Object> completion = pool.submit(() -> {
                    start.await();
                    try {
                        return client.complete(token, "done");
                    } catch (TaskRefusedException e) {
                        return e;
                    }
                });
                Future<?> cancel = pool.submit(() -> {
                    start.await();
                    return client.cancel(id, "race");
                });
                start.countDown();
                Object outcome = completion.get(30, TimeUnit.SECONDS);
                cancel.get(30, TimeUnit.SECONDS);
                Outcome finished = client.awaitCompletion(id, WAIT);
                TaskState state = client.externalTask(token).orElseThrow().state();
                if (outcome == TaskOutcome.SETTLED) {
                    completedWins++;
                    // the completion won: the cancellation still rolls the run back, which compensates the task
                    assertThat(state).isIn(TaskState.COMPENSATED, TaskState.COMPLETED);
                } else {
                    assertThat(outcome).isInstanceOf(TaskRefusedException.class);
                    assertThat(state).isEqualTo(TaskState.CANCELLED);
                }
                assertThat(finished).isIn(Outcome.ROLLED_BACK, Outcome.COMMITTED);
                dev.coop.test.Invariants.assertAll(client.events(id));
            }
            int wins = completedWins;
            Await.until("every winning completion compensated", WAIT, () -> undone.get() <= wins);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void ten_thousand_open_tasks_in_one_step_are_all_awaited(DataSource dataSource) throws Exception {
        int n = 10_000;
        Topic<Order> topic = Topic.of("task-many", Order.class);
        AtomicInteger results = new AtomicInteger();
        Saga<Order> saga = Saga.on(topic, "task-many-saga")
                .step("ask", step -> {
                    for (int i = 0; i < n; i++) {
                        step.openTask("parcel", Map.of("i", i), TaskOptions.none().key("parcel/" + i));
                    }
                })
                .step("after", step -> results.set(step.childResults().size()))
                .build();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("many", 1));
            Await.until("tasks open", WAIT, () -> client.externalTask("parcel/" + (n - 1)).isPresent());
            assertThat(client.openTasks("parcel", n)).hasSize(n);
            List<Future<?>> calls = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                int first = t;
                calls.add(pool.submit(() -> {
                    for (int i = first; i < n; i += 2) {
                        client.complete("parcel/" + i, i);
                    }
                }));
            }
            for (Future<?> call : calls) {
                call.get(120, TimeUnit.SECONDS);
            }
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(results.get()).isEqualTo(n);
        } finally {
            pool.shutdownNow();
        }
    }
}
