package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An engine that cannot get the connections it needs says so: refused at start when its pool is too small, whatever
 * wraps it; reported (an ERROR logged once, and its listeners told, which is what health shows) when its running
 * workers get no connection for several polls, and again when they get connections back.
 */
class ConnectionStarvationTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);
    static final Topic<Empty> TOPIC = Topic.of("starving", Empty.class);
    static final Saga<Empty> SAGA = Saga.on(TOPIC, "starving").step("one", step -> {
    }).build();

    /** A DataSource that hides what it wraps (as many frameworks' wrappers do). */
    record Plain(DataSource target) implements DataSource {
        @Override
        public Connection getConnection() throws SQLException {
            return target.getConnection();
        }

        @Override
        public Connection getConnection(String user, String password) throws SQLException {
            return target.getConnection(user, password);
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {
        }

        @Override
        public void setLoginTimeout(int seconds) {
        }

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() {
            return Logger.getGlobal();
        }

        @Override
        public <T> T unwrap(Class<T> type) throws SQLException {
            throw new SQLException("not a wrapper");
        }

        @Override
        public boolean isWrapperFor(Class<?> type) {
            return false;
        }
    }

    private static HikariDataSource pool(int size) {
        HikariDataSource pool = db.newDataSource(size);
        pool.setConnectionTimeout(250);
        return pool;
    }

    @Test
    void a_pool_too_small_behind_a_plain_wrapper_is_refused_at_start_naming_the_numbers() {
        try (HikariDataSource one = pool(1)) {
            assertThatThrownBy(() -> Coop.engine(new Plain(one)).register(SAGA).workers(2).start())
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("gave 1 of the 4 connections")
                    .hasMessageContaining("2 workers + 1 listener + 1 for clients");
            // and the connection it took is back in the pool
            Await.until("the pool is idle", WAIT, () -> one.getHikariPoolMXBean().getActiveConnections() == 0);
        }
    }

    @Test
    void a_large_enough_pool_behind_a_plain_wrapper_starts() {
        try (HikariDataSource four = pool(4);
                CoopEngine engine = Coop.engine(new Plain(four)).register(SAGA).workers(2).start()) {
            MessageId id = engine.client().launch(TOPIC, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void workers_without_connections_for_several_polls_are_reported_once_and_again_when_they_recover()
            throws Exception {
        AtomicInteger listening = new AtomicInteger();
        AtomicInteger starved = new AtomicInteger();
        AtomicInteger available = new AtomicInteger();
        EngineListener health = new EngineListener() {
            @Override
            public void notificationsConnected() {
                listening.incrementAndGet();
            }

            @Override
            public void connectionsStarved(Duration waited) {
                starved.incrementAndGet();
            }

            @Override
            public void connectionsAvailable() {
                available.incrementAndGet();
            }
        };
        try (HikariDataSource three = pool(3);
                CoopEngine engine = Coop.engine(three).register(SAGA).workers(1)
                        .pollInterval(Duration.ofMillis(100)).listener(health).start()) {
            Await.until("the listener holds its connection", WAIT, () -> listening.get() > 0);
            List<Connection> held = new ArrayList<>();
            try {
                while (held.size() < 2) { // everything the listener does not hold: the worker gets nothing
                    try {
                        held.add(three.getConnection());
                    } catch (SQLException busy) {
                        // the worker's probe had it for a moment
                    }
                }
                MessageId id = Coop.client(db.dataSource()).launch(TOPIC, new Empty());
                Await.until("the engine says its workers starve", WAIT, () -> starved.get() == 1);
                assertThat(Coop.client(db.dataSource()).statuses(id)).containsExactly(RunStatus.RUNNABLE);
                held.forEach(ConnectionStarvationTest::close);
                held.clear();
                assertThat(Coop.client(db.dataSource()).awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                Await.until("the engine says its workers get connections again", WAIT, () -> available.get() == 1);
                assertThat(starved.get()).as("reported once").isEqualTo(1);
            } finally {
                held.forEach(ConnectionStarvationTest::close);
            }
        }
    }

    private static void close(Connection c) {
        try {
            c.close();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
