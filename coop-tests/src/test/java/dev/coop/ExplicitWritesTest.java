package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunCount;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.PGConnection;

/**
 * Schema version 27: no trigger on {@code run}; the statements of the engine and the client write the wake-ups, the
 * ordering-key holds and releases, and what the counts over time need, themselves.
 */
class ExplicitWritesTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);
    static final Duration NEVER = Duration.ofHours(1);

    @Test
    void no_trigger_remains_on_run(DataSource dataSource) throws SQLException {
        Coop.client(dataSource); // the schema
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("""
                        SELECT coalesce(string_agg(t.tgname, ', '), '') FROM pg_trigger t
                         WHERE t.tgrelid = 'coop.run'::regclass AND NOT t.tgisinternal
                        """)) {
            rs.next();
            assertThat(rs.getString(1)).as("triggers on coop.run").isEmpty();
        }
    }

    /**
     * An engine's client launches a message of a saga the engine does not run (registered by an engine that is
     * gone): the launch notifies it; a launch of the engine's own saga, due now, notifies nobody.
     */
    @Test
    void an_engines_launch_notifies_the_sagas_it_does_not_run_and_not_its_own(DataSource dataSource)
            throws SQLException {
        Topic<Empty> own = Topic.of("explicit-own", Empty.class);
        Topic<Empty> elsewhere = Topic.of("explicit-elsewhere", Empty.class);
        Saga<Empty> ownSaga = Saga.on(own, "explicit-own-saga").step("one", step -> {
        }).build();
        Saga<Empty> remote = Saga.on(elsewhere, "explicit-elsewhere-saga").step("one", step -> {
        }).build();
        try (CoopEngine other = Coop.engine(dataSource).pollInterval(NEVER).register(remote).start()) {
            assertThat(other.client()).isNotNull();
        }
        HikariDataSource listenPool = db.newDataSource(1);
        try (Connection listen = listenPool.getConnection()) {
            try (Statement st = listen.createStatement()) {
                st.execute("LISTEN coop_coop");
            }
            try (CoopEngine engine = Coop.engine(dataSource).pollInterval(NEVER).register(ownSaga).start()) {
                MessageId mine = engine.client().launch(own, new Empty());
                assertThat(engine.client().awaitCompletion(mine, WAIT)).isEqualTo(Outcome.COMMITTED);
                engine.client().launch(elsewhere, new Empty());
                List<String> received = new ArrayList<>();
                PGConnection pg = listen.unwrap(PGConnection.class);
                Await.until("the notification of the other engine's saga", WAIT, () -> {
                    QuietWakeUpTest.receive(pg, received);
                    return received.contains(remote.name());
                });
                assertThat(received).as("in commit order: the engine's own launch and run sent nothing")
                        .containsExactly(remote.name());
            }
        }
    }

    /**
     * A step launches three children with the same ordering key in one statement: the first runs, the others are
     * created HELD and released one after another as the one ahead finishes, in launch order.
     */
    @Test
    void keyed_children_launched_together_run_one_at_a_time_in_launch_order(DataSource dataSource) {
        record Item(int n) {
        }
        Topic<Empty> batchTopic = Topic.of("explicit-keyed-batch", Empty.class);
        Topic<Item> itemTopic = Topic.of("explicit-keyed-item", Item.class);
        ConcurrentLinkedQueue<Integer> order = new ConcurrentLinkedQueue<>();
        Saga<Empty> batch = Saga.on(batchTopic, "explicit-keyed-batch-saga").step("launch", step -> {
            for (int i = 1; i <= 3; i++) {
                step.launch(itemTopic, new Item(i), LaunchOptions.none().orderingKey("same"));
            }
        }).build();
        Saga<Item> item = Saga.on(itemTopic, "explicit-keyed-item-saga")
                .step("first", step -> order.add(step.payload().n()))
                .step("second", step -> order.add(-step.payload().n()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4).register(batch, item).start()) {
            MessageId id = engine.client().launch(batchTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        assertThat(order).as("each keyed run's two steps before the next run's first").containsExactly(1, -1, 2, -2,
                3, -3);
    }

    /** The counts over time of a saga, read from the run rows: launched and committed without a count written. */
    @Test
    void the_counts_come_from_the_run_rows(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("explicit-counted", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "explicit-counted-saga").step("one", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            for (int i = 0; i < 3; i++) {
                MessageId id = engine.client().launch(topic, new Empty());
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            List<RunCount> counts = engine.client().counts(Duration.ofHours(1)).stream()
                    .filter(n -> n.saga().equals(saga.name())).toList();
            assertThat(counts.stream().mapToLong(RunCount::launched).sum()).isEqualTo(3);
            assertThat(counts.stream().mapToLong(RunCount::committed).sum()).isEqualTo(3);
        }
    }
}
