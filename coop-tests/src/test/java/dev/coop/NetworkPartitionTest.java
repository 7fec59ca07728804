package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.coop.failure.CoopStoreException;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import dev.coop.test.TcpProxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A silent network partition between engines and PostgreSQL (a {@link TcpProxy} that stops forwarding and keeps every
 * socket open, as dropped packets do): the engines' waits on the database are bounded, their listeners notice and
 * reconnect, a launch fails in bounded time, a dead engine's transaction is ended by the server, and after the heal
 * everything in flight completes, nothing lost or doubled. Timeouts are short here to keep the test quick.
 */
class NetworkPartitionTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(60);
    static final Topic<String> PARENT = Topic.of("partition-parent", String.class);
    static final Topic<String> CHILD = Topic.of("partition-child", String.class);
    static final Topic<String> SLOW = Topic.of("partition-slow", String.class);
    static final Topic<String> LAUNCHED = Topic.of("partition-launch", String.class);
    static final Saga<String> PARENTS = Saga.on(PARENT, "partition-parent")
            .step("fan-out", step -> {
                for (int i = 0; i < 3; i++) {
                    step.launch(CHILD, step.payload() + "/" + i);
                }
            })
            .step("done", step -> write(step.connection(), step.payload())).build();
    static final Saga<String> CHILDREN = Saga.on(CHILD, "partition-child")
            .step("work", step -> write(step.connection(), step.payload())).build();

    @BeforeAll
    static void table() throws SQLException {
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE written (what text NOT NULL)");
        }
    }

    static void write(Connection c, String what) throws SQLException {
        try (var insert = c.prepareStatement("INSERT INTO written (what) VALUES (?)")) {
            insert.setString(1, what);
            insert.executeUpdate();
        }
    }

    static int count(String like) {
        try (Connection c = db.dataSource().getConnection();
                var ps = c.prepareStatement("SELECT count(*) FROM written WHERE what LIKE ?")) {
            ps.setString(1, like);
            try (var rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A pool through the proxy, with the settings docs/guide/configuration.md recommends, short for the test. */
    static HikariDataSource pool(TcpProxy proxy, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(proxy.jdbcUrl(db.jdbcUrl()));
        config.setUsername(db.server().user());
        config.setPassword(db.server().password());
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(0);
        config.setConnectionTimeout(2_000);
        config.setValidationTimeout(500);
        config.addDataSourceProperty("tcpKeepAlive", "true");
        config.addDataSourceProperty("connectTimeout", "2");
        config.addDataSourceProperty("loginTimeout", "3");
        return new HikariDataSource(config);
    }

    /** Counts what an engine tells its listeners about its connections. */
    static final class Health implements EngineListener {
        final AtomicInteger connected = new AtomicInteger();
        final AtomicInteger lost = new AtomicInteger();
        final AtomicInteger retries = new AtomicInteger();

        @Override
        public void notificationsConnected() {
            connected.incrementAndGet();
        }

        @Override
        public void notificationsLost(Throwable cause) {
            lost.incrementAndGet();
        }

        @Override
        public void databaseRetry(String saga, Throwable cause) {
            retries.incrementAndGet();
        }
    }

    @Test
    void after_a_silent_partition_heals_everything_in_flight_completes_once_and_the_listeners_listen_again()
            throws Exception {
        List<Health> health = List.of(new Health(), new Health());
        List<HikariDataSource> pools = new ArrayList<>();
        List<CoopEngine> engines = new ArrayList<>();
        try (TcpProxy proxy = TcpProxy.toServerOf(db.jdbcUrl())) {
            for (Health h : health) {
                HikariDataSource pool = pool(proxy, 6);
                pools.add(pool);
                engines.add(Coop.engine(pool).register(PARENTS, CHILDREN).workers(4)
                        .pollInterval(Duration.ofMillis(200)).databaseTimeout(Duration.ofSeconds(1))
                        .idleInTransactionTimeout(Duration.ofSeconds(3)).shutdownTimeout(Duration.ofSeconds(5))
                        .listener(h).start());
            }
            Await.until("both engines listen", WAIT, () -> health.stream().allMatch(h -> h.connected.get() == 1));
            CoopClient client = Coop.client(db.dataSource()); // beside the partition
            List<MessageId> launched = new ArrayList<>();
            for (int i = 0; i < 60; i++) {
                launched.add(client.launch(PARENT, "h" + i));
            }
            Await.until("some hierarchies are done", WAIT, () -> count("h%/%") >= 10);
            proxy.blackhole();
            // the cut lasts until both engines noticed it: their listeners lost their connections (verified, timed
            // out) and their workers' statements timed out
            Await.until("both listeners noticed", WAIT, () -> health.stream().allMatch(h -> h.lost.get() > 0));
            Await.until("the workers' waits ended", WAIT, () -> health.stream().allMatch(h -> h.retries.get() > 0));
            proxy.heal();
            for (MessageId id : launched) {
                assertThat(client.awaitCompletion(id, WAIT)).as(id.toString()).isEqualTo(Outcome.COMMITTED);
                Invariants.assertAll(client.events(id));
            }
            for (int i = 0; i < 60; i++) {
                assertThat(count("h" + i)).as("hierarchy " + i + "'s parent wrote once").isEqualTo(1);
                assertThat(count("h" + i + "/%")).as("hierarchy " + i + "'s children wrote once each").isEqualTo(3);
            }
            Await.until("both listeners listen again", WAIT,
                    () -> health.stream().allMatch(h -> h.connected.get() >= 2));
        } finally {
            engines.forEach(CoopEngine::close);
            pools.forEach(HikariDataSource::close);
        }
    }

    @Test
    void a_launch_during_a_partition_fails_in_bounded_time_with_a_clear_error() throws Exception {
        try (TcpProxy proxy = TcpProxy.toServerOf(db.jdbcUrl()); HikariDataSource pool = pool(proxy, 2)) {
            CoopClient client = CoopClient.builder(pool).databaseTimeout(Duration.ofSeconds(1)).build();
            client.launch(LAUNCHED, "before"); // a connection the pool considers fresh
            proxy.blackhole();
            long start = System.nanoTime();
            assertThatThrownBy(() -> client.launch(LAUNCHED, "during")).isInstanceOf(CoopStoreException.class)
                    .hasMessageContaining("Could not launch a message on topic 'partition-launch'");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("bounded, not until the heal")
                    .isLessThan(Duration.ofSeconds(20));
            proxy.heal();
        }
    }

    @Test
    void a_partitioned_engines_transaction_is_ended_by_the_server_and_another_engine_runs_the_step() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger runs = new AtomicInteger();
        Saga<String> slow = Saga.on(SLOW, "partition-slow").step("hold", step -> {
            write(step.connection(), step.payload());
            if (runs.incrementAndGet() == 1) { // the first engine to run it: it is cut off meanwhile
                entered.countDown();
                release.await(60, TimeUnit.SECONDS);
            }
        }).build();
        try (TcpProxy proxy = TcpProxy.toServerOf(db.jdbcUrl()); HikariDataSource pool = pool(proxy, 3)) {
            CoopEngine cutOff = Coop.engine(pool).register(slow).workers(1).pollInterval(Duration.ofMillis(200))
                    .databaseTimeout(Duration.ofSeconds(1)).idleInTransactionTimeout(Duration.ofSeconds(2))
                    .shutdownTimeout(Duration.ofSeconds(2)).start();
            try {
                MessageId id = Coop.client(db.dataSource()).launch(SLOW, "held");
                assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
                proxy.blackhole(); // the engine is gone for the server: its transaction idles, holding the run
                try (CoopEngine other = Coop.engine(db.dataSource()).register(slow).workers(1)
                        .pollInterval(Duration.ofMillis(200)).start()) {
                    assertThat(other.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                }
                assertThat(count("held")).as("the cut-off engine's write died with its transaction").isEqualTo(1);
                assertThat(runs.get()).isEqualTo(2);
            } finally {
                release.countDown();
                proxy.heal();
                cutOff.close();
            }
        }
    }
}
