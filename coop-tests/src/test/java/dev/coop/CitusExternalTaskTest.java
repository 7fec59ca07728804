package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Order;
import dev.coop.failure.ChildRolledBackException;
import dev.coop.failure.Failure;
import dev.coop.failure.TaskRefusedException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.TaskView;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.Invariants;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * External tasks on a three-node Citus cluster (the key assertions of {@code ExternalTaskTest}): a step opens a
 * task, the client settles it by key or token (the task's row is local to the coordinator, the run it wakes is on
 * the hierarchy's shard, {@code RootSettlement}), the next step reads its result; a failed task rolls the run back; a
 * cancel while the task is open settles its run unstarted and cancels the task ({@code RootChildren}); the open
 * tasks are listed; a completion while no engine runs wakes the parent for the next one.
 */
class CitusExternalTaskTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Approval(String by, boolean approved) {
    }

    record Refund(String order) {
    }

    static final Map<String, String> tokens = new ConcurrentHashMap<>();

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    static TaskView awaitOpen(CoopClient client, String tokenOrKey) {
        return Await.value("task " + tokenOrKey + " open", WAIT, () -> client.externalTask(tokenOrKey)
                .filter(t -> t.state() == TaskState.OPEN).orElse(null));
    }

    static String awaitTask(CoopClient client, String name) {
        String token = awaitToken(name);
        Await.until("task " + name + " open", WAIT, () -> client.externalTask(token).isPresent());
        return token;
    }

    static String awaitToken(String name) {
        return Await.value("token of " + name, WAIT, () -> tokens.get(name));
    }

    @Test
    void the_next_step_waits_for_the_task_settled_by_key_and_reads_its_typed_result() {
        Topic<Order> topic = Topic.of("citus-task-result", Order.class);
        List<Object> seen = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "citus-task-result")
                .step("ask", step -> tokens.put(step.payload().id(), step.openTask("manager-approval",
                        Map.of("order", step.payload().id()),
                        TaskOptions.none().key("citus-approval/" + step.payload().id())).token()))
                .step("decide", step -> {
                    seen.add(step.taskResult("manager-approval", Approval.class));
                    step.setResult("decided");
                })
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("c1", 1));
            String token = awaitToken("c1");
            TaskView open = awaitOpen(client, token);
            assertThat(open.key()).contains("citus-approval/c1");
            assertThat(client.statuses(id)).containsExactly(RunStatus.WAITING);
            assertThat(client.openTasks("manager-approval", 10)).extracting(TaskView::token).contains(token);

            assertThat(client.complete("citus-approval/c1", new Approval("ada", true)))
                    .isEqualTo(TaskOutcome.SETTLED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(seen).containsExactly(new Approval("ada", true));
            assertThat(client.result(id, String.class)).isEqualTo("decided");
            assertThat(client.externalTask(token).orElseThrow().state()).isEqualTo(TaskState.COMPLETED);
            assertThat(client.complete(token, new Approval("ada", true))).isEqualTo(TaskOutcome.ALREADY_SETTLED);
            assertThatThrownBy(() -> client.complete(token, new Approval("bob", false)))
                    .isInstanceOf(TaskRefusedException.class).hasMessageContaining("already completed with another");
            assertThat(client.openTasks("manager-approval", 10)).extracting(TaskView::token).doesNotContain(token);
            Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void a_failed_task_rolls_the_run_back_with_the_external_failure_as_its_cause() {
        Topic<Order> topic = Topic.of("citus-task-fails", Order.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "citus-task-fails")
                .step("ask", step -> tokens.put("fails", step.openTask("kyc-check", step.payload()).token()))
                .compensateWith((step, cause) -> ran.add("compensated ask"))
                .step("never", step -> ran.add("never"))
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("f", 1));
            String token = awaitToken("fails");
            awaitOpen(client, token);
            assertThat(client.fail(token, "passport expired", "kyc-provider")).isEqualTo(TaskOutcome.SETTLED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(ran).containsExactly("compensated ask");
            List<Event> events = client.events(id);
            Event rollingBack = events.stream()
                    .filter(e -> e.type() == EventType.ROLLING_BACK && "citus-task-fails".equals(e.saga()))
                    .findFirst().orElseThrow();
            Failure failure = Failure.fromJson(rollingBack.exception());
            assertThat(failure.type()).isEqualTo(ChildRolledBackException.TYPE);
            assertThat(failure.causes().getFirst().message()).isEqualTo("passport expired");
            assertThat(client.externalTask(token).orElseThrow().settledBy()).contains("kyc-provider");
            Invariants.assertAll(events);
        }
    }

    @Test
    void a_cancel_while_the_task_is_open_cancels_the_task_and_rolls_the_run_back() {
        Topic<Order> topic = Topic.of("citus-task-cancel", Order.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "citus-task-cancel")
                .step("ask", step -> tokens.put("cancel", step.openTask("approval", step.payload()).token()))
                .compensateWith((step, cause) -> ran.add("compensated ask"))
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("x", 1));
            String token = awaitToken("cancel");
            awaitOpen(client, token);
            assertThat(client.cancel(id, "no longer needed")).isEqualTo(CancelResult.REQUESTED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(ran).containsExactly("compensated ask");
            TaskView cancelled = client.externalTask(token).orElseThrow();
            assertThat(cancelled.state()).isEqualTo(TaskState.CANCELLED);
            assertThat(cancelled.settledBy()).contains("coop");
            assertThat(client.openTasks("approval", 10)).extracting(TaskView::token).doesNotContain(token);
            assertThatThrownBy(() -> client.complete(token, "too late")).isInstanceOf(TaskRefusedException.class)
                    .hasMessageContaining("was cancelled").hasMessageContaining("no longer needed");
            Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void a_completion_while_the_engine_is_down_continues_the_run_when_it_returns() {
        Topic<Order> topic = Topic.of("citus-task-down", Order.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "citus-task-down")
                .step("ask", step -> tokens.put("down", step.openTask("approval", step.payload()).token()))
                .step("after", step -> ran.add("after " + step.taskResult("approval", String.class)))
                .build();
        MessageId id;
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga).start()) {
            id = engine.client().launch(topic, new Order("d", 1));
            awaitOpen(engine.client(), awaitToken("down"));
        }
        CoopClient client = Coop.client(db.dataSource());
        assertThat(client.complete(tokens.get("down"), "approved")).isEqualTo(TaskOutcome.SETTLED);
        assertThat(client.statuses(id)).containsExactly(RunStatus.RUNNABLE);
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga).start()) {
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        assertThat(ran).containsExactly("after approved");
    }

    @Test
    void a_missed_deadline_times_the_task_out_rolls_back_and_refuses_a_late_completion() {
        Topic<Order> topic = Topic.of("citus-task-deadline", Order.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "citus-task-deadline-saga")
                .step("ask", step -> tokens.put("deadline", step.openTask("approval", step.payload()).token()))
                .compensateWith((step, cause) -> ran.add("compensated ask"))
                .step("never", step -> ran.add("never"))
                .build();
        // the deadline passes when the test moves the clock, after the task opened (a deadline 700 ms ahead was
        // sometimes missed before the first step ran, under load)
        dev.coop.test.TestClock clock = new dev.coop.test.TestClock();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).clock(clock).register(saga).start()) {
            CoopClient client = engine.client();
            Instant deadline = clock.instant().plus(java.time.Duration.ofHours(1));
            MessageId id = client.launch(topic, new Order("late", 1),
                    CooperationContext.of(Deadlines.HAPPY_PATH, Deadline.at(deadline, "test")));
            String token = awaitTask(client, "deadline");
            assertThat(client.externalTask(token).orElseThrow().deadline()).isPresent();
            Await.until("the parent waits for its task", WAIT, () -> client.events(id).stream()
                    .anyMatch(e -> e.type() == dev.coop.inspect.EventType.SUSPENDED));
            clock.advance(java.time.Duration.ofHours(2));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(ran).containsExactly("compensated ask");
            TaskView task = client.externalTask(token).orElseThrow();
            assertThat(task.state()).isEqualTo(TaskState.TIMED_OUT);
            assertThat(task.failure().orElseThrow()).contains("deadline");
            assertThatThrownBy(() -> client.complete(token, "too late"))
                    .isInstanceOfSatisfying(TaskRefusedException.class,
                            e -> assertThat(e.state()).isEqualTo(TaskState.TIMED_OUT))
                    .hasMessageContaining("timed out");
            Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void a_task_past_its_own_timeout_is_a_child_failure_the_handler_can_recover_from() {
        Topic<Order> topic = Topic.of("citus-task-timeout", Order.class);
        Saga<Order> saga = Saga.on(topic, "citus-task-timeout-saga")
                .step("ask", step -> tokens.put("timeout", step.openTask("approval", step.payload(),
                        TaskOptions.none().timeout(Duration.ofMillis(300))).token()))
                .onChildFailure((step, failure, handling, pending) -> {
                    tokens.put("timeout-failure", failure.failure().causes().getFirst().message());
                    tokens.put("timeout-again", step.openTask("approval", step.payload()).token());
                    return pending;
                })
                .step("after", step -> step.setResult(step.taskResult("approval", String.class)))
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("t", 1));
            String first = awaitTask(client, "timeout");
            String again = awaitTask(client, "timeout-again"); // opened by the handler after the timeout
            assertThat(client.externalTask(first).orElseThrow().state()).isEqualTo(TaskState.TIMED_OUT);
            assertThat(tokens.get("timeout-failure")).contains("was not settled by its timeout");
            assertThatThrownBy(() -> client.complete(first, "late"))
                    .isInstanceOfSatisfying(TaskRefusedException.class,
                            e -> assertThat(e.state()).isEqualTo(TaskState.TIMED_OUT));
            client.complete(again, "in time");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(id, String.class)).isEqualTo("in time");
            Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void a_rollback_after_the_task_completed_launches_its_compensation_and_waits_for_it() {
        Topic<Order> topic = Topic.of("citus-task-compensate", Order.class);
        Topic<Refund> refunds = Topic.of("citus-task-compensate-refund", Refund.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "citus-task-compensate-saga")
                .step("pay", step -> tokens.put("compensate", step.openTask("payment", step.payload(),
                        TaskOptions.none().key("citus-payment/" + step.payload().id())
                                .compensation(refunds, new Refund(step.payload().id())))
                        .token()))
                .compensateWith((step, cause) -> ran.add("compensated pay"))
                .step("ship", step -> {
                    throw new IllegalStateException("warehouse on fire");
                })
                .build();
        Saga<Refund> refund = Saga.on(refunds, "citus-task-compensate-refunder")
                .step("refund", step -> ran.add("refunded " + step.payload().order()))
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga, refund).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("4711", 1));
            String token = awaitTask(client, "compensate");
            client.complete("citus-payment/4711", Map.of("charge", "ch_1"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(ran).containsExactly("refunded 4711", "compensated pay");
            assertThat(client.externalTask(token).orElseThrow().state()).isEqualTo(TaskState.COMPENSATED);
            assertThatThrownBy(() -> client.complete(token, Map.of("charge", "ch_1")))
                    .isInstanceOf(TaskRefusedException.class).hasMessageContaining("compensated");
            Invariants.assertAll(client.events(id));
        }
    }
}
