package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Idempotent launches: a second launch with the same key on the same topic launches nothing and answers the first
 * message's id, from clients and steps, also when the launches race from several connections; keys are checked.
 */
class IdempotentLaunchTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Order(int n) {
    }

    @Test
    void a_second_launch_with_the_same_key_returns_the_first_message_and_launches_nothing(DataSource dataSource)
            throws SQLException {
        Topic<Order> topic = Topic.of("idem-orders", Order.class);
        Topic<Order> other = Topic.of("idem-other", Order.class);
        AtomicInteger ran = new AtomicInteger();
        Saga<Order> saga = Saga.on(topic, "idem-orders-saga").step("charge", step -> ran.incrementAndGet()).build();
        Saga<Order> otherSaga = Saga.on(other, "idem-other-saga").step("charge", step -> ran.incrementAndGet())
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga, otherSaga).start()) {
            CoopClient client = engine.client();
            MessageId first = client.launch(topic, new Order(1), LaunchOptions.none().idempotencyKey("order-1"));
            MessageId again = client.launch(topic, new Order(2), LaunchOptions.none().idempotencyKey("order-1"));
            MessageId outbox;
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                outbox = client.launch(c, topic, new Order(3), LaunchOptions.none().idempotencyKey("order-1"));
                c.commit();
            }
            MessageId otherTopic = client.launch(other, new Order(4), LaunchOptions.none().idempotencyKey("order-1"));
            assertThat(again).isEqualTo(first);
            assertThat(outbox).isEqualTo(first);
            assertThat(otherTopic).as("a key is scoped by topic").isNotEqualTo(first);
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(otherTopic, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ran.get()).isEqualTo(2);
            assertThat(messagesWithKey(dataSource, "idem-orders", "order-1")).isEqualTo(1);
            assertThat(payloadOf(dataSource, first)).contains("\"n\":1");
        }
    }

    @Test
    void launches_racing_from_several_clients_with_one_key_return_one_id_and_write_one_message(DataSource dataSource)
            throws Exception {
        Topic<Order> topic = Topic.of("idem-race", Order.class);
        Saga<Order> saga = Saga.on(topic, "idem-race-saga").step("charge", step -> {
        }).build();
        int keys = 40;
        int clients = 6;
        List<HikariDataSource> pools = new ArrayList<>();
        ExecutorService threads = Executors.newFixedThreadPool(clients);
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            Map<String, Set<MessageId>> answers = new ConcurrentHashMap<>();
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> launchers = new ArrayList<>();
            for (int t = 0; t < clients; t++) {
                HikariDataSource pool = db.newDataSource(2); // a client of its own, as in another JVM
                pools.add(pool);
                CoopClient client = Coop.client(pool);
                int thread = t;
                launchers.add(threads.submit(() -> {
                    start.await();
                    for (int k = 0; k < keys; k++) {
                        String key = "race-" + k;
                        MessageId id = client.launch(topic, new Order(thread),
                                LaunchOptions.none().idempotencyKey(key));
                        answers.computeIfAbsent(key, x -> ConcurrentHashMap.newKeySet()).add(id);
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> launcher : launchers) {
                launcher.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            }
            assertThat(answers).hasSize(keys);
            answers.forEach((key, ids) -> assertThat(ids).as("ids answered for key %s", key).hasSize(1));
            try (Connection c = dataSource.getConnection();
                    PreparedStatement ps = c.prepareStatement("""
                            SELECT count(DISTINCT m.id), count(r.id) FROM coop.message m
                              JOIN coop.run r ON r.message_id = m.id WHERE m.topic = 'idem-race'
                            """);
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getInt(1)).as("messages").isEqualTo(keys);
                assertThat(rs.getInt(2)).as("runs").isEqualTo(keys);
            }
            for (Set<MessageId> ids : answers.values()) {
                assertThat(engine.client().awaitCompletion(ids.iterator().next(), WAIT)).isEqualTo(Outcome.COMMITTED);
            }
        } finally {
            threads.shutdownNow();
            pools.forEach(HikariDataSource::close);
        }
    }

    @Test
    void a_step_launching_a_key_already_taken_gets_the_holder_and_does_not_wait_for_it(DataSource dataSource) {
        Topic<Order> parentTopic = Topic.of("idem-parent", Order.class);
        Topic<Order> childTopic = Topic.of("idem-child", Order.class);
        AtomicInteger childRuns = new AtomicInteger();
        Map<Integer, List<MessageId>> launchedBy = new ConcurrentHashMap<>();
        Saga<Order> parent = Saga.on(parentTopic, "idem-parent-saga").step("launch", step -> {
            // twice in one step, and the same key as the other parents: one child message in all
            MessageId a = step.launch(childTopic, new Order(step.payload().n()),
                    LaunchOptions.none().idempotencyKey("shared-child"));
            MessageId b = step.launch(childTopic, new Order(step.payload().n()),
                    LaunchOptions.none().idempotencyKey("shared-child"));
            launchedBy.put(step.payload().n(), List.of(a, b));
        }).step("after", step -> {
        }).build();
        Saga<Order> child = Saga.on(childTopic, "idem-child-saga").step("work", step -> childRuns.incrementAndGet())
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(parent, child).start()) {
            CoopClient client = engine.client();
            MessageId first = client.launch(parentTopic, new Order(1));
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            MessageId second = client.launch(parentTopic, new Order(2));
            assertThat(client.awaitCompletion(second, WAIT)).isEqualTo(Outcome.COMMITTED);
            MessageId holder = launchedBy.get(1).get(0);
            assertThat(launchedBy.get(1)).containsExactly(holder, holder);
            assertThat(launchedBy.get(2)).containsExactly(holder, holder);
            assertThat(childRuns.get()).isEqualTo(1);
            assertThat(messagesWithKey(dataSource, "idem-child", "shared-child")).isEqualTo(1);
        }
    }

    @Test
    void after_retention_deletes_the_message_a_launch_with_its_key_launches_anew(DataSource dataSource) {
        Topic<Order> topic = Topic.of("idem-pruned", Order.class);
        Saga<Order> saga = Saga.on(topic, "idem-pruned-saga").step("work", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            LaunchOptions keyed = LaunchOptions.none().idempotencyKey("once-per-retention");
            MessageId first = client.launch(topic, new Order(1), keyed);
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.launch(topic, new Order(2), keyed)).isEqualTo(first);
            assertThat(client.prune(Duration.ZERO).hierarchies()).isPositive(); // the other tests' too: one database
            MessageId anew = client.launch(topic, new Order(3), keyed);
            assertThat(anew).isNotEqualTo(first);
            assertThat(client.awaitCompletion(anew, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void hostile_keys_and_options_are_refused_with_the_problem_named() {
        LaunchOptions none = LaunchOptions.none();
        assertThatThrownBy(() -> none.idempotencyKey(null)).isInstanceOf(CoopValidationException.class)
                .hasMessage("An idempotency key must not be null");
        assertThatThrownBy(() -> none.idempotencyKey("")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("must not be empty or blank");
        assertThatThrownBy(() -> none.orderingKey("   ")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("An ordering key must not be empty or blank");
        assertThatThrownBy(() -> none.idempotencyKey("x".repeat(256))).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("must be at most 255 characters, was 256 characters");
        assertThatThrownBy(() -> none.orderingKey("y".repeat(1_000_000))).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("was 1000000 characters");
        assertThatThrownBy(() -> none.idempotencyKey("a\u0000b")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("control characters, found U+0000 at index 1");
        assertThatThrownBy(() -> none.orderingKey("a\u001b[31mred")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("found U+001B at index 1");
        assertThatThrownBy(() -> none.idempotencyKey("bad\uD800")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("unpaired surrogate at index 3");
        assertThatThrownBy(() -> none.priority(11)).isInstanceOf(CoopValidationException.class)
                .hasMessage("A priority must be between -10 and 10, was 11");
        assertThatThrownBy(() -> none.priority(Integer.MIN_VALUE)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("was -2147483648");
        assertThatThrownBy(() -> none.idempotencyKey("a").idempotencyKey("b"))
                .isInstanceOf(CoopValidationException.class)
                .hasMessage("The launch option idempotencyKey was already set to 'a'");
        assertThatThrownBy(() -> none.at(Instant.MAX)).isInstanceOf(CoopValidationException.class);
        assertThatThrownBy(() -> none.context(null)).isInstanceOf(NullPointerException.class);
        // what is valid: any printable text up to 255 characters, unicode included, taken as is
        LaunchOptions ok = none.idempotencyKey("'; DROP TABLE coop.message; --").orderingKey("k\u00e9y \uD83D\uDE00")
                .priority(-10);
        assertThat(ok.idempotencyKey()).contains("'; DROP TABLE coop.message; --");
        assertThat(ok.priority()).isEqualTo(-10);
        assertThat(none.priority()).isZero();
        assertThat(none.idempotencyKey()).isEmpty();
    }

    @Test
    void a_key_that_looks_like_sql_is_only_ever_a_value(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("idem-hostile", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "idem-hostile-saga").step("work", step -> {
        }).build();
        String key = "'); DELETE FROM coop.message; --" + "\u00e9".repeat(200);
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId a = engine.client().launch(topic, new Empty(),
                    LaunchOptions.none().idempotencyKey(key).orderingKey(key));
            MessageId b = engine.client().launch(topic, new Empty(), LaunchOptions.none().idempotencyKey(key));
            assertThat(b).isEqualTo(a);
            assertThat(engine.client().awaitCompletion(a, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(messagesWithKey(dataSource, "idem-hostile", key)).isEqualTo(1);
        }
    }

    static int messagesWithKey(DataSource dataSource, String topic, String key) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT count(*) FROM coop.message WHERE topic = ? AND idempotency_key = ?")) {
            ps.setString(1, topic);
            ps.setString(2, key);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    static String payloadOf(DataSource dataSource, MessageId id) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT payload::text FROM coop.message WHERE id = ?")) {
            ps.setObject(1, id.value());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1).replace(" ", "");
            }
        }
    }
}
