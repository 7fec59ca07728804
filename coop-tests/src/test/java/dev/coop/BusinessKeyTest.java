package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Order;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.test.CoopDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
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
            assertThat(client.runs(RunQuery.newest().tag("region:eu").limit(1))) // a page filled by the newest runs
                    .extracting(RunSummary::messageId).containsExactly(other);
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

    /**
     * With a few common tags, PostgreSQL guesses any other tag common too and would rather walk {@code run_created}
     * backwards, filtering, than read the tag index: on ten million runs, a read of the whole table for a tag of ten.
     * A query by tag looks through the newest runs only so far; when they do not fill its page, it reads the tagged
     * messages first. The planner is pushed towards the walk here by making sorts look expensive: that second
     * statement must still read the tag index first.
     */
    @Test
    void runs_by_tag_read_the_tag_index_even_when_the_newest_order_looks_cheaper(DataSource dataSource)
            throws Exception {
        List<String> sent = new java.util.concurrent.CopyOnWriteArrayList<>();
        CoopClient client = Coop.client(recording(dataSource, sent));
        assertThat(client.runs(RunQuery.newest().tag("vip"))).isEmpty();
        assertThat(sent.stream().filter(q -> q.contains("m.tags @>"))).hasSize(2); // the newest runs, then by tag
        String sql = sent.stream().filter(q -> q.contains("LATERAL")).findFirst().orElseThrow();
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("SET LOCAL enable_sort = off");
            StringBuilder plan = new StringBuilder();
            try (PreparedStatement ps = c.prepareStatement("EXPLAIN " + sql)) {
                ps.setString(1, "vip"); // the tagged messages
                ps.setString(2, "vip"); // the query's own condition
                ps.setInt(3, 50);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        plan.append(rs.getString(1)).append('\n');
                    }
                }
            }
            assertThat(plan.toString()).contains("message_tags").doesNotContain("run_created");
            c.rollback();
        }
    }

    /** {@code target}, noting the text of every statement prepared on its connections in {@code sent}. */
    private static DataSource recording(DataSource target, List<String> sent) {
        return (DataSource) Proxy.newProxyInstance(BusinessKeyTest.class.getClassLoader(),
                new Class<?>[]{DataSource.class}, (proxy, m, args) -> {
                    Object r = invoke(target, m, args);
                    if (!(r instanceof Connection connection)) {
                        return r;
                    }
                    return Proxy.newProxyInstance(BusinessKeyTest.class.getClassLoader(),
                            new Class<?>[]{Connection.class}, (p, cm, cargs) -> {
                                if (cm.getName().equals("prepareStatement")) {
                                    sent.add((String) cargs[0]);
                                }
                                return invoke(connection, cm, cargs);
                            });
                });
    }

    private static Object invoke(Object target, Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
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
