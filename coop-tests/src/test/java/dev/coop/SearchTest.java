package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.MessageMatch;
import dev.coop.test.CoopDatabase;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Finding messages by what an operator has at hand: a message id or an idempotency key. */
class SearchTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    @Test
    void a_message_is_found_by_its_id_or_by_the_idempotency_key_it_was_launched_with(DataSource dataSource) {
        Topic<Empty> orders = Topic.of("search-orders", Empty.class);
        Topic<Empty> refunds = Topic.of("search-refunds", Empty.class);
        try (CoopEngine engine = Coop.engine(dataSource)
                .register(Saga.on(orders, "search-orders-saga").step("s", step -> {
                }).build(), Saga.on(refunds, "search-refunds-saga").step("s", step -> {
                }).build()).start()) {
            CoopClient client = engine.client();
            MessageId order = client.launch(orders, new Empty(), LaunchOptions.none().idempotencyKey("A-17"));
            MessageId refund = client.launch(refunds, new Empty(), LaunchOptions.none().idempotencyKey("A-17"));
            client.launch(orders, new Empty(), LaunchOptions.none().idempotencyKey("A-18"));

            assertThat(client.search("A-17")).extracting(MessageMatch::messageId)
                    .containsExactlyInAnyOrder(order, refund);
            assertThat(client.search(" A-17 ")).allMatch(m -> m.matchedBy().equals("idempotency key"));
            assertThat(client.search(order.toString())).singleElement().satisfies(m -> {
                assertThat(m.matchedBy()).isEqualTo("message id");
                assertThat(m.topic()).isEqualTo("search-orders");
                assertThat(m.launchedAt()).isNotNull();
            });
            assertThat(client.search("no-such-key")).isEmpty();

            // a business key or a tag: every match, newest first, in pages; a message matched two ways once
            MessageId older = client.launch(orders, new Empty(), LaunchOptions.none().businessKey("customer/1"));
            MessageId newer = client.launch(refunds, new Empty(),
                    LaunchOptions.none().businessKey("customer/1").tags("customer/1", "vip"));
            assertThat(client.search("customer/1")).extracting(MessageMatch::messageId).containsExactly(newer, older);
            assertThat(client.search("customer/1").getFirst().matchedBy()).isEqualTo("business key, tag");
            assertThat(client.search("vip")).singleElement().satisfies(m -> assertThat(m.matchedBy()).isEqualTo("tag"));
            var first = client.search("customer/1", null, 1);
            assertThat(first).extracting(MessageMatch::messageId).containsExactly(newer);
            assertThat(client.search("customer/1", first.getLast().launchedAt(), 1)).extracting(MessageMatch::messageId)
                    .containsExactly(older);
            assertThatThrownBy(() -> client.search("x", null, 0)).isInstanceOf(CoopValidationException.class);
            assertThatThrownBy(() -> client.search(" ")).isInstanceOf(CoopValidationException.class);
        }
    }
}
