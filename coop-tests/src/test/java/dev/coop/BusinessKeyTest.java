package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Order;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Business keys and tags label launches; runs are found by them through indexes. */
class BusinessKeyTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void runs_are_found_by_the_business_key_and_tags_of_their_launch(DataSource dataSource) {
        Topic<Order> topic = Topic.of("bk-orders", Order.class);
        Topic<Order> child = Topic.of("bk-child", Order.class);
        Saga<Order> saga = Saga.on(topic, "bk-saga")
                .step("go", step -> step.launch(child, step.payload(),
                        LaunchOptions.none().businessKey("shipment/" + step.payload().id()).tags("child")))
                .build();
        Saga<Order> childSaga = Saga.on(child, "bk-child-saga").step("c", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga, childSaga).start()) {
            CoopClient client = engine.client();
            MessageId vip = client.launch(topic, new Order("4711", 1),
                    LaunchOptions.none().businessKey("order/4711").tags("vip", "region:eu"));
            MessageId other = client.launch(topic, new Order("4712", 1),
                    LaunchOptions.none().businessKey("order/4712").tags("region:eu"));
            assertThat(client.awaitCompletion(vip, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(other, WAIT)).isEqualTo(Outcome.COMMITTED);

            assertThat(client.runs(RunQuery.newest().businessKey("order/4711"))).extracting(RunSummary::messageId)
                    .containsExactly(vip);
            assertThat(client.runs(RunQuery.newest().tag("vip"))).extracting(RunSummary::messageId)
                    .containsExactly(vip);
            assertThat(client.runs(RunQuery.newest().tag("region:eu"))).extracting(RunSummary::messageId)
                    .containsExactlyInAnyOrder(vip, other);
            assertThat(client.runs(RunQuery.newest().tag("region:eu").businessKey("order/4712")))
                    .extracting(RunSummary::messageId).containsExactly(other);
            assertThat(client.runs(RunQuery.newest().businessKey("shipment/4711"))).extracting(RunSummary::saga)
                    .containsExactly("bk-child-saga");
            assertThat(client.runs(RunQuery.newest().businessKey("nobody"))).isEmpty();
        }
    }

    @Test
    void bad_business_keys_and_tags_are_refused_by_name() {
        assertThatThrownBy(() -> LaunchOptions.none().businessKey("")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("business key");
        assertThatThrownBy(() -> LaunchOptions.none().businessKey("x".repeat(256)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("at most 255");
        assertThatThrownBy(() -> LaunchOptions.none().businessKey("a").businessKey("b"))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("already set");
        assertThatThrownBy(() -> LaunchOptions.none().tags(new String[0])).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("1 to 10 tags");
        assertThatThrownBy(() -> LaunchOptions.none().tags("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("was 11");
        assertThatThrownBy(() -> LaunchOptions.none().tags("t".repeat(101)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("at most 100");
        assertThatThrownBy(() -> LaunchOptions.none().tags("a\nb")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("control characters");
        assertThatThrownBy(() -> LaunchOptions.none().tags("a", "a")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("twice");
    }

    @Test
    void lookups_by_key_and_tag_can_use_their_indexes(DataSource dataSource) throws Exception {
        Coop.client(dataSource); // migrates
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("SET LOCAL enable_seqscan = off");
            assertThat(plan(s, "SELECT id FROM coop.message WHERE business_key = 'order/4711'"))
                    .contains("message_business_key");
            assertThat(plan(s, "SELECT id FROM coop.message WHERE tags @> ARRAY['vip'::text]"))
                    .contains("message_tags");
            c.rollback();
        }
    }

    private static String plan(Statement s, String sql) throws Exception {
        StringBuilder plan = new StringBuilder();
        try (ResultSet rs = s.executeQuery("EXPLAIN " + sql)) {
            while (rs.next()) {
                plan.append(rs.getString(1)).append('\n');
            }
        }
        return plan.toString();
    }
}
