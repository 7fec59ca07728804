package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.ExternalTask;
import dev.coop.LaunchOptions;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.SignalOutcome;
import dev.coop.TaskOptions;
import dev.coop.TaskOutcome;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The guide's samples (docs/guide) of external tasks, run. */
class ExternalTaskSamplesTest {
    @RegisterExtension
    final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Order(String id, long cents) {
    }

    record Charge(String chargeId) {
    }

    record Refund(String orderId) {
    }

    /** Stands in for the step's own outbox table: where the payment link goes. */
    static final Map<String, String> outbox = new ConcurrentHashMap<>();

    @Test
    void a_saga_waits_for_a_payment_webhook(DataSource dataSource) {
        Topic<Order> orders = Topic.of("orders", Order.class);
        Topic<Refund> refunds = Topic.of("refund-requested", Refund.class);
        // tag::external-task-step[]
        Saga<Order> checkout = Saga.on(orders, "checkout")
                .step("request-payment", step -> {
                    Order order = step.payload();
                    ExternalTask payment = step.openTask("payment", order,
                            TaskOptions.none()
                                    .key("payment/" + order.id()) // the provider's webhook names the order
                                    .compensation(refunds, new Refund(order.id()))); // on rollback after payment
                    // hand the token out with the step's own writes (here: an outbox), never before it commits
                    outbox.put(order.id(), "https://pay.example.com/?ref=" + payment.token());
                })
                .step("ship", step -> {
                    Charge charge = step.taskResult("payment", Charge.class); // like a child's result
                    step.setResult(charge.chargeId());
                })
                .build();
        // end::external-task-step[]
        Saga<Refund> refunder = Saga.on(refunds, "refunder").step("refund", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(checkout, refunder).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(orders, new Order("4711", 1_250));
            Await.until("payment requested", WAIT, () -> client.externalTask("payment/4711").isPresent());
            // tag::external-task-complete[]
            // in the webhook's HTTP handler, in any process that has a CoopClient:
            TaskOutcome outcome = client.complete("payment/4711", new Charge("ch_93"));
            // the provider retries its webhook: the same result again is a no-op
            TaskOutcome again = client.complete("payment/4711", new Charge("ch_93")); // ALREADY_SETTLED
            // a declined card instead: client.fail("payment/4711", "card declined") is a child failure
            // end::external-task-complete[]
            assertThat(outcome).isEqualTo(TaskOutcome.SETTLED);
            assertThat(again).isEqualTo(TaskOutcome.ALREADY_SETTLED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(id, String.class)).isEqualTo("ch_93");
        }
    }

    record Shipment(String id) {
    }

    record Shipped(String trackingNumber) {
    }

    @Test
    void a_saga_waits_for_a_signal_that_may_come_first(DataSource dataSource) {
        Topic<Shipment> shipments = Topic.of("shipments", Shipment.class);
        // tag::signal-wait[]
        Saga<Shipment> delivery = Saga.on(shipments, "delivery")
                .step("wait-for-carrier", step -> step.awaitSignal("shipped", "shipment/" + step.payload().id(),
                        Duration.ofDays(3))) // no signal within 3 days: a child failure of this step
                .step("notify", step -> {
                    Shipped shipped = step.taskResult("shipped", Shipped.class); // the signal's payload
                    step.setResult(shipped.trackingNumber());
                })
                .build();
        // end::signal-wait[]
        try (CoopEngine engine = Coop.engine(dataSource).register(delivery).start()) {
            CoopClient client = engine.client();
            // tag::signal-send[]
            // the carrier's callback, in any process that has a CoopClient, before or after the saga waits:
            SignalOutcome sent = client.signal("shipment/4711", new Shipped("TRK-1"), Duration.ofDays(1));
            // KEPT (for up to a day) when no step waits for the key yet, DELIVERED when one does
            // end::signal-send[]
            assertThat(sent).isEqualTo(SignalOutcome.KEPT);
            MessageId id = client.launch(shipments, new Shipment("4711"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(id, String.class)).isEqualTo("TRK-1");
        }
    }

    @Test
    void runs_are_found_by_business_key_and_tag(DataSource dataSource) {
        Topic<Order> orders = Topic.of("orders", Order.class);
        Saga<Order> checkout = Saga.on(orders, "checkout").step("pay", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(checkout).start()) {
            CoopClient client = engine.client();
            // tag::business-key[]
            MessageId id = client.launch(orders, new Order("4711", 1_250),
                    LaunchOptions.none().businessKey("order/4711").tags("vip", "region:eu"));
            // later, "what happened to order 4711?": its runs, newest first, found through an index
            List<RunSummary> runs = client.runs(RunQuery.newest().businessKey("order/4711"));
            List<RunSummary> vips = client.runs(RunQuery.newest().tag("vip").limit(20));
            // end::business-key[]
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(runs).extracting(RunSummary::messageId).containsExactly(id);
            assertThat(vips).extracting(RunSummary::messageId).containsExactly(id);
        }
    }
}
