package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.LaunchOptions;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The guide's sample (docs/guide) of launch options, run. */
class LaunchOptionsSamplesTest {
    @RegisterExtension
    final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Payment(String account, String requestId, long cents) {
    }

    record Receipt(String account) {
    }

    @Test
    void launch_options_from_a_client_and_from_a_step(DataSource dataSource) {
        Topic<Payment> payments = Topic.of("payments", Payment.class);
        Topic<Receipt> receipts = Topic.of("receipts", Receipt.class);
        // tag::launch-options-step[]
        Saga<Payment> pay = Saga.on(payments, "pay")
                .step("charge", step -> {
                    Payment p = step.payload();
                    // launched once per payment request, however often this step runs
                    step.launch(receipts, new Receipt(p.account()),
                            LaunchOptions.none().idempotencyKey("receipt-" + p.requestId()));
                })
                .build();
        // end::launch-options-step[]
        Saga<Receipt> mail = Saga.on(receipts, "mail-receipt").step("send", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(pay, mail).start()) {
            CoopClient client = engine.client();
            Payment payment = new Payment("account-7", "req-42", 1_250);
            // tag::launch-options-client[]
            LaunchOptions options = LaunchOptions.none()
                    .idempotencyKey(payment.requestId()) // the same request twice launches once
                    .orderingKey(payment.account()) // one payment per account at a time, in order
                    .priority(5); // before the runs of priority 0
            MessageId id = client.launch(payments, payment, options);
            MessageId again = client.launch(payments, payment, options); // == id, nothing launched
            // end::launch-options-client[]
            assertThat(again).isEqualTo(id);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }
}
