package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.StepGate;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Work a rollback starts runs to its end under the cancellation it answers (issue 34, item 9): what a cancelled
 * hierarchy's rollback launches (an external task's compensation, a finally part's message) is not reached by that
 * cancellation, nor are the runs those launch in turn; a cancellation of their own scope still is.
 */
class RollbackUnderCancellationTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Order(String id) {
    }

    record Refund(String order) {
    }

    final List<String> ran = new CopyOnWriteArrayList<>();
    final Map<String, String> tokens = new ConcurrentHashMap<>();

    @Test
    void a_completed_tasks_compensation_and_what_it_launches_run_when_the_hierarchy_is_cancelled() {
        Topic<Order> orders = Topic.of("cancelled-refund-order", Order.class);
        Topic<Refund> refunds = Topic.of("cancelled-refund-refund", Refund.class);
        Topic<Refund> receipts = Topic.of("cancelled-refund-receipt", Refund.class);
        StepGate shipping = new StepGate();
        Saga<Order> order = Saga.on(orders, "cancelled-refund-order-saga")
                .step("pay", step -> tokens.put(step.payload().id(), step.openTask("payment", step.payload(),
                        TaskOptions.none().compensation(refunds, new Refund(step.payload().id()))).token()))
                .step("ship", step -> shipping.pass())
                .build();
        Saga<Refund> refund = Saga.on(refunds, "cancelled-refund-refunder")
                .step("refund", step -> {
                    ran.add("refunded " + step.payload().order());
                    step.launch(receipts, step.payload()); // a child of the compensation: it runs too
                })
                .step("confirm", step -> ran.add("confirmed " + step.payload().order()))
                .build();
        Saga<Refund> receipt = Saga.on(receipts, "cancelled-refund-receipt-saga")
                .step("send", step -> ran.add("receipt " + step.payload().order()))
                .build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(order, refund, receipt).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(orders, new Order("o-1"));
            String token = openTask(client, "o-1");
            client.complete(token, Map.of("charge", "ch_1"));
            shipping.awaitArrivals(1, WAIT);
            assertThat(client.cancel(id, "customer withdrew")).isEqualTo(CancelResult.REQUESTED);
            shipping.open();

            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            String log = EventLog.table(events);
            assertThat(ran).as(log).containsExactly("refunded o-1", "receipt o-1", "confirmed o-1");
            assertThat(client.externalTask(token).orElseThrow().state()).as(log).isEqualTo(TaskState.COMPENSATED);
            assertCommitted(events, "cancelled-refund-refunder", log);
            assertCommitted(events, "cancelled-refund-receipt-saga", log);
            assertThat(events).as("the compensation's runs never gave up\n%s", log)
                    .noneMatch(e -> e.type() == EventType.ROLLING_BACK && e.saga() != null
                            && e.saga().startsWith("cancelled-refund-r"));
            dev.coop.test.Invariants.assertAll(events);
        }
    }

    @Test
    void a_finally_parts_launch_during_the_rollback_of_a_cancelled_hierarchy_runs() {
        Topic<Empty> topic = Topic.of("cancelled-finally", Empty.class);
        Topic<Empty> children = Topic.of("cancelled-finally-child", Empty.class);
        Topic<Empty> releases = Topic.of("cancelled-finally-release", Empty.class);
        StepGate child = new StepGate();
        Saga<Empty> holder = Saga.on(topic, "cancelled-finally-saga")
                .step("acquire", step -> {
                    ran.add("acquire");
                    step.launch(children, new Empty());
                })
                .compensateWith((step, cause) -> ran.add("undo acquire"))
                .andFinally(step -> {
                    ran.add("finally launches release");
                    step.launch(releases, new Empty());
                })
                .step("after", step -> ran.add("after"))
                .build();
        Saga<Empty> working = Saga.on(children, "cancelled-finally-child-saga")
                .step("work", step -> child.pass())
                .build();
        Saga<Empty> release = Saga.on(releases, "cancelled-finally-release-saga")
                .step("release", step -> ran.add("release ran"))
                .build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(holder, working, release).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Empty());
            child.awaitArrivals(1, WAIT);
            assertThat(client.cancel(id, "stop")).isEqualTo(CancelResult.REQUESTED);
            child.open();

            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            String log = EventLog.table(events);
            assertThat(ran).as(log).containsExactly("acquire", "undo acquire", "finally launches release",
                    "release ran");
            assertCommitted(events, "cancelled-finally-release-saga", log);
            dev.coop.test.Invariants.assertAll(events);
        }
    }

    @Test
    void a_cancellation_of_the_compensations_own_scope_still_reaches_it() {
        Topic<Order> orders = Topic.of("own-scope-order", Order.class);
        Topic<Refund> refunds = Topic.of("own-scope-refund", Refund.class);
        StepGate refunding = new StepGate();
        Saga<Order> order = Saga.on(orders, "own-scope-order-saga")
                .step("pay", step -> tokens.put(step.payload().id(), step.openTask("payment", step.payload(),
                        TaskOptions.none().compensation(refunds, new Refund(step.payload().id()))).token()))
                .step("ship", step -> {
                    throw new IllegalStateException("warehouse on fire");
                })
                .build();
        Saga<Refund> refund = Saga.on(refunds, "own-scope-refunder")
                .step("hold", step -> refunding.pass())
                .step("refund", step -> ran.add("refunded"))
                .build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(order, refund).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(orders, new Order("o-2"));
            String token = openTask(client, "o-2");
            client.complete(token, Map.of("charge", "x"));
            refunding.awaitArrivals(1, WAIT);
            assertThat(client.externalTask(token).orElseThrow().state()).as("launched, not yet committed")
                    .isEqualTo(TaskState.COMPENSATING);
            assertThat(client.cancel(id, "too late")).as("the root's cancellation does not reach the refund")
                    .isEqualTo(CancelResult.ALREADY_FINISHED);
            Lineage refundRun = Await.value("the refund's run", WAIT, () -> client.tree(id).runs().getFirst()
                    .children().stream().filter(r -> "own-scope-refunder".equals(r.saga())).findFirst()
                    .map(r -> r.lineage()).orElse(null));
            assertThat(client.cancel(refundRun, "operator stops the refund")).isEqualTo(CancelResult.REQUESTED);
            refunding.open();

            Outcome outcome = client.awaitCompletion(id, WAIT);
            List<Event> events = client.events(id);
            String log = EventLog.table(events);
            assertThat(ran).as(log).isEmpty();
            assertThat(events).as(log).anyMatch(e -> e.type() == EventType.ROLLED_BACK
                    && "own-scope-refunder".equals(e.saga()));
            // the refund never committed: the task does not say it was compensated, and the rollback fails
            assertThat(client.externalTask(token).orElseThrow().state()).as(log)
                    .isEqualTo(TaskState.COMPENSATION_FAILED);
            assertThat(outcome).as(log).isEqualTo(Outcome.ROLLBACK_FAILED);
            assertThat(events).as(log).anyMatch(e -> e.type() == EventType.ROLLBACK_FAILED
                    && "own-scope-order-saga".equals(e.saga()) && e.exception() != null
                    && e.exception().contains("compensation 'own-scope-refund' of external task 'payment'"));
            dev.coop.test.Invariants.assertAll(events);
        }
    }

    @Test
    void a_compensation_that_fails_leaves_the_task_compensation_failed_and_the_rollback_failed() {
        Topic<Order> orders = Topic.of("failed-refund-order", Order.class);
        Topic<Refund> refunds = Topic.of("failed-refund-refund", Refund.class);
        StepGate shipping = new StepGate();
        Saga<Order> order = Saga.on(orders, "failed-refund-order-saga")
                .step("pay", step -> tokens.put(step.payload().id(), step.openTask("payment", step.payload(),
                        TaskOptions.none().compensation(refunds, new Refund(step.payload().id()))).token()))
                .step("ship", step -> shipping.pass())
                .build();
        Saga<Refund> refund = Saga.on(refunds, "failed-refund-refunder")
                .step("refund", step -> {
                    ran.add("refund tried");
                    throw new IllegalStateException("card expired");
                })
                .build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(order, refund).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(orders, new Order("o-3"));
            String token = openTask(client, "o-3");
            client.complete(token, Map.of("charge", "ch_3"));
            shipping.awaitArrivals(1, WAIT);
            assertThat(client.cancel(id, "customer withdrew")).isEqualTo(CancelResult.REQUESTED);
            shipping.open();

            Outcome outcome = client.awaitCompletion(id, WAIT);
            List<Event> events = client.events(id);
            String log = EventLog.table(events);
            assertThat(ran).as(log).contains("refund tried");
            assertThat(client.externalTask(token).orElseThrow().state()).as(log)
                    .isEqualTo(TaskState.COMPENSATION_FAILED);
            assertThat(outcome).as(log).isEqualTo(Outcome.ROLLBACK_FAILED);
            assertThat(events).as("the rollback names the compensation and why it failed\n%s", log)
                    .anyMatch(e -> e.type() == EventType.ROLLBACK_FAILED && "failed-refund-order-saga".equals(e.saga())
                            && e.exception() != null && e.exception().contains("external task 'payment'")
                            && e.exception().contains("card expired"));
            // a late completion of the task is refused, naming what happened
            assertThatThrownBy(() -> client.complete(token, Map.of("charge", "again")))
                    .isInstanceOf(dev.coop.failure.TaskRefusedException.class)
                    .hasMessageContaining("compensation failed");
            dev.coop.test.Invariants.assertAll(events);
        }
    }

    /** The token of the order's task, once the step that opened it committed. */
    private String openTask(CoopClient client, String order) {
        String token = Await.value("the payment task", WAIT, () -> tokens.get(order));
        Await.until("the payment task open", WAIT, () -> client.externalTask(token)
                .filter(t -> t.state() == TaskState.OPEN).isPresent());
        return token;
    }

    private static void assertCommitted(List<Event> events, String saga, String log) {
        assertThat(events).as("%s committed\n%s", saga, log)
                .anyMatch(e -> e.type() == EventType.COMMITTED && saga.equals(e.saga()));
    }
}
