package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Order;
import dev.coop.failure.ChildRolledBackException;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.Failure;
import dev.coop.failure.TaskRefusedException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.TaskView;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** External tasks: children of a step whose handler lives outside Coop, settled by token or key from anywhere. */
class ExternalTaskTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Approval(String by, boolean approved) {
    }

    record Refund(String order) {
    }

    /** The token a step handed out, by the order it was opened for. */
    static final Map<String, String> tokens = new ConcurrentHashMap<>();

    static TaskView awaitOpen(CoopClient client, String tokenOrKey) {
        return Await.value("task " + tokenOrKey + " open", WAIT, () -> client.externalTask(tokenOrKey)
                .filter(t -> t.state() == TaskState.OPEN).orElse(null));
    }

    static String awaitToken(String order) {
        return Await.value("token of " + order, WAIT, () -> tokens.get(order));
    }

    @Test
    void the_next_step_waits_for_the_task_and_reads_its_typed_result(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-result", Order.class);
        List<Object> seen = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "task-result-saga")
                .step("ask", step -> {
                    ExternalTask task = step.openTask("manager-approval", Map.of("order", step.payload().id()),
                            TaskOptions.none().key("approval/" + step.payload().id()));
                    tokens.put(step.payload().id(), task.token());
                })
                .step("decide", step -> {
                    seen.add(step.taskResult("manager-approval", Approval.class));
                    seen.add(step.childResults().getFirst().saga());
                    step.setResult("decided");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("r1", 1));
            String token = awaitToken("r1");
            TaskView open = awaitOpen(client, token);
            assertThat(open.name()).isEqualTo("manager-approval");
            assertThat(open.key()).contains("approval/r1");
            assertThat(open.payload()).contains("r1");
            assertThat(client.externalTask("approval/r1").orElseThrow().token()).isEqualTo(token);
            assertThat(client.statuses(id)).containsExactly(RunStatus.WAITING);
            assertThat(client.openTasks("manager-approval", 10)).extracting(TaskView::token).contains(token);

            assertThat(client.complete("approval/r1", new Approval("ada", true))).isEqualTo(TaskOutcome.SETTLED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(seen).containsExactly(new Approval("ada", true), ExternalTask.SAGA);
            assertThat(client.externalTask(token).orElseThrow().state()).isEqualTo(TaskState.COMPLETED);

            // idempotent: the same result again is a no-op that says so, by token or by key
            assertThat(client.complete(token, new Approval("ada", true))).isEqualTo(TaskOutcome.ALREADY_SETTLED);
            assertThat(client.complete("approval/r1", new Approval("ada", true)))
                    .isEqualTo(TaskOutcome.ALREADY_SETTLED);
            // a conflicting one is refused and names the first
            assertThatThrownBy(() -> client.complete(token, new Approval("bob", false)))
                    .isInstanceOf(TaskRefusedException.class)
                    .hasMessageContaining("manager-approval").hasMessageContaining("already completed with another")
                    .hasMessageContaining("coop-client");
            assertThatThrownBy(() -> client.fail(token, "changed my mind"))
                    .isInstanceOf(TaskRefusedException.class).hasMessageContaining("already completed");
            dev.coop.test.Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void a_failed_task_is_a_child_failure_whose_handler_can_open_it_again(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-retry", Order.class);
        Saga<Order> saga = Saga.on(topic, "task-retry-saga")
                .step("pay", step -> tokens.put("retry-" + step.iteration(),
                        step.openTask("payment", step.payload()).token()))
                .onChildFailure((step, failure, handling, pending) -> {
                    tokens.put("retry-handler", step.openTask("payment", step.payload()).token());
                    return pending;
                })
                .step("ship", step -> step.setResult(step.taskResult("payment", String.class)))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("t2", 1));
            String first = awaitToken("retry-1");
            awaitOpen(client, first);
            assertThat(client.fail(first, "card declined")).isEqualTo(TaskOutcome.SETTLED);
            assertThat(client.fail(first, "card declined")).isEqualTo(TaskOutcome.ALREADY_SETTLED);
            String second = awaitToken("retry-handler");
            awaitOpen(client, second);
            assertThat(client.externalTask(first).orElseThrow().state()).isEqualTo(TaskState.FAILED);
            client.complete(second, "paid");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(id, String.class)).isEqualTo("paid");
        }
    }

    @Test
    void an_unhandled_failure_rolls_the_run_back_with_the_external_failure_in_its_stack_trace(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-fails", Order.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "task-fails-saga")
                .step("ask", step -> tokens.put("fails", step.openTask("kyc-check", step.payload()).token()))
                .compensateWith((step, cause) -> ran.add("compensated ask"))
                .step("never", step -> ran.add("never"))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("f", 1));
            String token = awaitToken("fails");
            awaitOpen(client, token);
            client.fail(token, "passport expired", "kyc-provider");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(ran).containsExactly("compensated ask");
            Event rollingBack = client.events(id).stream()
                    .filter(e -> e.type() == EventType.ROLLING_BACK && "task-fails-saga".equals(e.saga()))
                    .findFirst().orElseThrow();
            Failure failure = Failure.fromJson(rollingBack.exception());
            assertThat(failure.type()).isEqualTo(ChildRolledBackException.TYPE);
            Failure external = failure.causes().getFirst();
            assertThat(external.type()).isEqualTo("dev.coop.failure.ExternalTaskFailedException");
            assertThat(external.message()).isEqualTo("passport expired");
            assertThat(external.source()).isEqualTo("kyc-provider");
            assertThat(client.externalTask(token).orElseThrow().settledBy()).contains("kyc-provider");
        }
    }

    @Test
    void a_step_that_fails_opened_no_task(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-outbox", Order.class);
        Saga<Order> saga = Saga.on(topic, "task-outbox-saga")
                .step("ask", step -> {
                    tokens.put("outbox", step.openTask("approval", step.payload(),
                            TaskOptions.none().key("outbox/1")).token());
                    throw new IllegalStateException("boom after opening");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("o", 1));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            String token = tokens.get("outbox");
            assertThat(client.externalTask(token)).isEmpty();
            assertThat(client.externalTask("outbox/1")).isEmpty();
            assertThatThrownBy(() -> client.complete(token, "x")).isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("No external task has this token");
        }
    }

    @Test
    void a_key_held_by_an_open_task_cannot_be_opened_again(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-key-reuse", Order.class);
        Saga<Order> saga = Saga.on(topic, "task-key-reuse-saga")
                .step("ask", step -> step.openTask("approval", step.payload(), TaskOptions.none().key("same/1")))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId first = client.launch(topic, new Order("k1", 1));
            awaitOpen(client, "same/1");
            MessageId second = client.launch(topic, new Order("k2", 1));
            assertThat(client.awaitCompletion(second, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            String why = client.events(second).stream().filter(e -> e.type() == EventType.ROLLING_BACK)
                    .findFirst().orElseThrow().exception();
            assertThat(why).contains("same/1").contains("already held by an open task");
            assertThat(client.complete("same/1", "ok")).isEqualTo(TaskOutcome.SETTLED);
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            // settled, the key is free again
            MessageId third = client.launch(topic, new Order("k3", 1));
            Await.until("the third opened its task", WAIT, () -> client.externalTask("same/1")
                    .filter(t -> t.state() == TaskState.OPEN).isPresent());
            client.complete("same/1", "ok again");
            assertThat(client.awaitCompletion(third, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void unknown_forged_malformed_and_oversized_tokens_and_keys_are_refused_by_name(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        String forged = "ct_" + "A".repeat(32);
        assertThatThrownBy(() -> client.complete(forged, "x")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("No external task has this token");
        assertThatThrownBy(() -> client.complete("ct_short", "x")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Malformed external task token");
        assertThatThrownBy(() -> client.complete("ct_" + "A".repeat(10_000), "x"))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("Malformed");
        assertThatThrownBy(() -> client.fail("k".repeat(256), "why")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("key must be at most 255");
        assertThatThrownBy(() -> client.complete("bad\u0000key", "x")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("control characters");
        assertThatThrownBy(() -> client.complete("nobody/holds/this", "x"))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("nobody/holds/this");
        assertThatThrownBy(() -> client.complete(null, "x")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("tokenOrKey");
        assertThatThrownBy(() -> client.fail("some/key", "")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("reason");
        assertThatThrownBy(() -> TaskOptions.none().key("ct_looks-like-a-token"))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("must not start with 'ct_'");
        assertThat(client.externalTask(forged)).isEmpty();
    }

    @Test
    void a_result_over_the_payload_limit_is_refused_and_the_task_stays_open(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-big", Order.class);
        Saga<Order> saga = Saga.on(topic, "task-big-saga")
                .step("ask", step -> tokens.put("big", step.openTask("upload", step.payload()).token()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("b", 1));
            String token = awaitToken("big");
            awaitOpen(client, token);
            String tenMegabytes = "x".repeat(10 * 1024 * 1024);
            assertThatThrownBy(() -> client.complete(token, tenMegabytes))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("over the limit");
            assertThat(client.externalTask(token).orElseThrow().state()).isEqualTo(TaskState.OPEN);
            client.complete(token, "small");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void a_completion_in_a_callers_transaction_that_rolls_back_did_nothing(DataSource dataSource) throws Exception {
        Topic<Order> topic = Topic.of("task-callers-tx", Order.class);
        Saga<Order> saga = Saga.on(topic, "task-callers-tx-saga")
                .step("ask", step -> tokens.put("tx", step.openTask("approval", step.payload()).token()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("tx", 1));
            String token = awaitToken("tx");
            awaitOpen(client, token);
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                assertThat(client.complete(c, token, "yes")).isEqualTo(TaskOutcome.SETTLED);
                c.rollback();
            }
            assertThat(client.externalTask(token).orElseThrow().state()).isEqualTo(TaskState.OPEN);
            assertThat(client.statuses(id)).containsExactly(RunStatus.WAITING);
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                client.complete(c, token, "yes");
                c.commit();
            }
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void a_completion_while_the_parents_engine_is_down_continues_the_parent_when_it_returns(DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-engine-down", Order.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "task-engine-down-saga")
                .step("ask", step -> tokens.put("down", step.openTask("approval", step.payload()).token()))
                .step("after", step -> ran.add("after " + step.taskResult("approval", String.class)))
                .build();
        MessageId id;
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            id = engine.client().launch(topic, new Order("d", 1));
            awaitOpen(engine.client(), awaitToken("down"));
        }
        CoopClient client = Coop.client(dataSource);
        assertThat(client.complete(tokens.get("down"), "approved")).isEqualTo(TaskOutcome.SETTLED);
        assertThat(client.statuses(id)).containsExactly(RunStatus.RUNNABLE);
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        assertThat(ran).containsExactly("after approved");
    }
}
