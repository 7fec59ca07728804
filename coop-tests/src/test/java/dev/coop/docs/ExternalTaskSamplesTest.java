package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.ExternalTask;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.TaskOptions;
import dev.coop.TaskOutcome;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The README's samples of external tasks, run. */
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
}
