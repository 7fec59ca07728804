package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * An engine sends no NOTIFY for runs of its own sagas that it makes runnable now (it wakes its workers in-process,
 * and a notification would make every commit queue on PostgreSQL's notification lock), while every wake-up another
 * engine needs is still sent: engines that never poll complete hierarchies that cross between them.
 */
class QuietWakeUpTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);
    static final Duration NEVER = Duration.ofHours(1);

    private final Topic<Empty> parentTopic = Topic.of("quiet-parent", Empty.class);
    private final Topic<Empty> childTopic = Topic.of("quiet-child", Empty.class);
    private final Saga<Empty> parent = Saga.on(parentTopic, "quiet-parent-handler")
            .step("launch", step -> step.launch(childTopic, new Empty()))
            .step("after", step -> {
            })
            .build();
    private final Saga<Empty> child = Saga.on(childTopic, "quiet-child-handler")
            .step("one", step -> {
            })
            .step("two", step -> {
            })
            .build();

    @Test
    void an_engines_own_work_sends_no_notification_and_a_client_without_an_engine_does(DataSource dataSource)
            throws SQLException {
        HikariDataSource listenPool = db.newDataSource(1);
        try (Connection listen = listenPool.getConnection();
                CoopEngine engine = Coop.engine(dataSource).pollInterval(NEVER).register(parent, child).start()) {
            try (Statement st = listen.createStatement()) {
                st.execute("LISTEN coop_coop");
            }
            for (int i = 0; i < 3; i++) { // launch, child launched by a step, parent woken by its last child
                MessageId id = engine.client().launch(parentTopic, new Empty());
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            MessageId bare = Coop.client(dataSource).launch(parentTopic, new Empty());
            // notifications arrive in commit order: anything the engine had sent comes before the bare client's
            List<String> received = new ArrayList<>();
            PGConnection pg = listen.unwrap(PGConnection.class);
            Await.until("the notification of the launch by a client without an engine", WAIT, () -> {
                receive(pg, received);
                return received.contains(parent.name());
            });
            assertThat(received).as("notifications up to the bare client's launch").containsExactly(parent.name());
            assertThat(engine.client().awaitCompletion(bare, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    /**
     * The launch notification is decided row by row (schema version 17), and PostgreSQL sends a transaction's
     * identical notifications once: a step launching five children of a saga this engine does not run notifies that
     * saga once, and a child launched for later notifies its delay.
     */
    @Test
    void a_fan_out_to_another_engines_saga_notifies_it_once_and_a_later_launch_names_its_delay(DataSource dataSource)
            throws SQLException {
        Topic<Empty> fanTopic = Topic.of("quiet-fan", Empty.class);
        Topic<Empty> elsewhere = Topic.of("quiet-elsewhere", Empty.class);
        Saga<Empty> fan = Saga.on(fanTopic, "quiet-fan-handler")
                .step("launch", step -> {
                    for (int i = 0; i < 5; i++) {
                        step.launch(elsewhere, new Empty());
                    }
                    step.launch(elsewhere, new Empty(), java.time.Instant.now().plus(Duration.ofHours(1)));
                })
                .build();
        Saga<Empty> remote = Saga.on(elsewhere, "quiet-elsewhere-handler").step("one", step -> {
        }).build();
        HikariDataSource listenPool = db.newDataSource(1);
        try (Connection listen = listenPool.getConnection()) {
            // registered by an engine that is gone: the fan's engine does not run this saga
            try (CoopEngine other = Coop.engine(dataSource).pollInterval(NEVER).register(remote).start()) {
                assertThat(other.client()).isNotNull();
            }
            try (Statement st = listen.createStatement()) {
                st.execute("LISTEN coop_coop");
            }
            try (CoopEngine engine = Coop.engine(dataSource).pollInterval(NEVER).register(fan).start()) {
                engine.client().launch(fanTopic, new Empty());
                List<String> received = new ArrayList<>();
                PGConnection pg = listen.unwrap(PGConnection.class);
                Await.until("the notifications of the fan-out", WAIT, () -> {
                    receive(pg, received);
                    return received.size() >= 2;
                });
                assertThat(received).hasSize(2);
                assertThat(received.get(0)).isEqualTo(remote.name());
                assertThat(received.get(1)).startsWith(remote.name() + " ");
                long millis = Long.parseLong(received.get(1).substring(remote.name().length() + 1));
                assertThat(millis).isBetween(Duration.ofMinutes(59).toMillis(), Duration.ofHours(1).toMillis());
            }
        }
    }

    @Test
    void engines_that_never_poll_still_wake_each_other_across_a_hierarchy(DataSource dataSource) {
        HikariDataSource pool = db.newDataSource(8);
        try (CoopEngine parents = Coop.engine(pool).name("quiet-parents").pollInterval(NEVER).workers(2)
                .register(parent).start();
                CoopEngine children = Coop.engine(pool).name("quiet-children").pollInterval(NEVER).workers(2)
                        .register(child).start()) {
            for (int i = 0; i < 5; i++) {
                // the parent engine's own launch wakes it in-process; its child and the parent's wake-up after the
                // child finished cross to the other engine and back by notification
                MessageId id = parents.client().launch(parentTopic, new Empty());
                assertThat(parents.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                MessageId fromChildren = children.client().launch(parentTopic, new Empty());
                assertThat(children.client().awaitCompletion(fromChildren, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
        }
    }

    /** Adds the payloads of the notifications that arrived (waiting up to 100 ms for some) to {@code received}. */
    static void receive(PGConnection pg, List<String> received) {
        try {
            PGNotification[] batch = pg.getNotifications(100);
            if (batch != null) {
                for (PGNotification n : batch) {
                    received.add(n.getParameter());
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
