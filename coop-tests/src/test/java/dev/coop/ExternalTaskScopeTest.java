package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.ExternalTaskTest.Refund;
import dev.coop.Payloads.Order;
import dev.coop.failure.TaskRefusedException;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.TaskView;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Deadlines, cancellation and rollback reach external tasks as they reach children. */
class ExternalTaskScopeTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final Map<String, String> tokens = new ConcurrentHashMap<>();

    static String awaitToken(CoopClient client, String name) {
        String token = Await.value("token " + name, WAIT, () -> tokens.get(name));
        Await.until("task " + name + " open", WAIT, () -> client.externalTask(token).isPresent());
        return token;
    }

    @Test
    void a_missed_deadline_times_the_task_out_rolls_back_and_refuses_a_late_completion(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-deadline", Order.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "task-deadline-saga")
                .step("ask", step -> tokens.put("deadline", step.openTask("approval", step.payload()).token()))
                .compensateWith((step, cause) -> ran.add("compensated ask"))
                .step("never", step -> ran.add("never"))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            Instant deadline = client.databaseTime().plusMillis(700);
            MessageId id = client.launch(topic, new Order("late", 1),
                    CooperationContext.of(Deadlines.HAPPY_PATH, Deadline.at(deadline, "test")));
            String token = awaitToken(client, "deadline");
            assertThat(client.externalTask(token).orElseThrow().deadline()).isPresent();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(ran).containsExactly("compensated ask");
            TaskView task = client.externalTask(token).orElseThrow();
            assertThat(task.state()).isEqualTo(TaskState.TIMED_OUT);
            assertThat(task.failure().orElseThrow()).contains("deadline");
            assertThatThrownBy(() -> client.complete(token, "too late"))
                    .isInstanceOfSatisfying(TaskRefusedException.class,
                            e -> assertThat(e.state()).isEqualTo(TaskState.TIMED_OUT))
                    .hasMessageContaining("timed out");
            dev.coop.test.Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void a_task_past_its_own_timeout_is_a_child_failure_the_handler_can_recover_from(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-timeout", Order.class);
        Saga<Order> saga = Saga.on(topic, "task-timeout-saga")
                .step("ask", step -> tokens.put("timeout", step.openTask("approval", step.payload(),
                        TaskOptions.none().timeout(Duration.ofMillis(300))).token()))
                .onChildFailure((step, failure, handling, pending) -> {
                    tokens.put("timeout-failure", failure.failure().causes().getFirst().message());
                    tokens.put("timeout-again", step.openTask("approval", step.payload()).token());
                    return pending;
                })
                .step("after", step -> step.setResult(step.taskResult("approval", String.class)))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("t", 1));
            String first = awaitToken(client, "timeout");
            String again = awaitToken(client, "timeout-again"); // opened by the handler after the timeout
            assertThat(client.externalTask(first).orElseThrow().state()).isEqualTo(TaskState.TIMED_OUT);
            assertThat(tokens.get("timeout-failure")).contains("was not settled by its timeout");
            assertThatThrownBy(() -> client.complete(first, "late"))
                    .isInstanceOfSatisfying(TaskRefusedException.class,
                            e -> assertThat(e.state()).isEqualTo(TaskState.TIMED_OUT));
            client.complete(again, "in time");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(id, String.class)).isEqualTo("in time");
            dev.coop.test.Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void a_cancelled_scope_cancels_its_open_tasks(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-cancel", Order.class);
        Saga<Order> saga = Saga.on(topic, "task-cancel-saga")
                .step("ask", step -> tokens.put("cancel", step.openTask("approval", step.payload()).token()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("c", 1));
            String token = awaitToken(client, "cancel");
            client.cancel(id, "customer left");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.externalTask(token).orElseThrow().state()).isEqualTo(TaskState.CANCELLED);
            assertThatThrownBy(() -> client.fail(token, "no"))
                    .isInstanceOfSatisfying(TaskRefusedException.class,
                            e -> assertThat(e.state()).isEqualTo(TaskState.CANCELLED))
                    .hasMessageContaining("customer left");
            dev.coop.test.Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void a_rollback_after_the_task_completed_launches_its_compensation_and_waits_for_it(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-compensate", Order.class);
        Topic<Refund> refunds = Topic.of("task-compensate-refund", Refund.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "task-compensate-saga")
                .step("pay", step -> tokens.put("compensate", step.openTask("payment", step.payload(),
                        TaskOptions.none().key("payment/" + step.payload().id())
                                .compensation(refunds, new Refund(step.payload().id())))
                        .token()))
                .compensateWith((step, cause) -> ran.add("compensated pay"))
                .step("ship", step -> {
                    throw new IllegalStateException("warehouse on fire");
                })
                .build();
        Saga<Refund> refund = Saga.on(refunds, "task-compensate-refunder")
                .step("refund", step -> ran.add("refunded " + step.payload().order()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga, refund).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("4711", 1));
            String token = awaitToken(client, "compensate");
            client.complete("payment/4711", Map.of("charge", "ch_1"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(ran).containsExactly("refunded 4711", "compensated pay");
            assertThat(client.externalTask(token).orElseThrow().state()).isEqualTo(TaskState.COMPENSATED);
            assertThatThrownBy(() -> client.complete(token, Map.of("charge", "ch_1")))
                    .isInstanceOf(TaskRefusedException.class).hasMessageContaining("compensated");
            dev.coop.test.Invariants.assertAll(client.events(id));
        }
    }
}
