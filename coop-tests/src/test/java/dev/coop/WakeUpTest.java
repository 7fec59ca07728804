package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import dev.coop.test.StepRecorder;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * How engines learn there is work: notifications on a dedicated connection, polling when notifications are off, the
 * listener coming back after losing its connection, and a run continuing at once when its step emitted nothing.
 */
class WakeUpTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final Duration NEVER = Duration.ofHours(1);

    @Test
    void poll_only_engines_complete_a_two_level_hierarchy_without_any_listener(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("poll-only-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("poll-only-child", Empty.class);
        Topic<Empty> grandchildTopic = Topic.of("poll-only-grandchild", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "poll-only-root-handler")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "poll-only-child-handler")
                .step("launch", step -> step.launch(grandchildTopic, new Empty()))
                .build();
        Saga<Empty> grandchild = Saga.on(grandchildTopic, "poll-only-grandchild-handler")
                .step("handle", step -> {
                })
                .build();
        HikariDataSource pool = db.newDataSource(8);
        // the parent and its children run in different engines, so every hand-over goes through the database
        try (CoopEngine parents = Coop.engine(pool).name("poll-parents").notifications(false)
                .pollInterval(Duration.ofMillis(50)).workers(2).register(root, grandchild).start();
                CoopEngine children = Coop.engine(pool).name("poll-children").notifications(false)
                        .pollInterval(Duration.ofMillis(50)).workers(2).register(child).start()) {
            CoopClient client = Coop.client(dataSource); // a client that wakes no engine directly
            for (int i = 0; i < 3; i++) {
                MessageId id = client.launch(rootTopic, new Empty());
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                List<Event> events = client.events(id);
                // a run whose last step's children all committed is committed by its last child's transaction, so
                // the child saga's COMMITTED may come from the grandchild's engine; everything else is its own
                assertThat(events).filteredOn(e -> "poll-only-child-handler".equals(e.saga())
                        && e.type() != EventType.COMMITTED).extracting(Event::engine).containsOnly(children.id());
                Invariants.assertAll(events);
            }
            assertThat(listenerPids(dataSource, pool.getPoolName())).as("LISTEN sessions of poll-only engines")
                    .isEmpty();
        }
    }

    /**
     * Poll-only is the mode for engines that cannot LISTEN (a pooler in transaction mode, a distributed PostgreSQL
     * whose notifications stay on the node that sent them; see docs/scaling.md). Three engines, each on a pool of its
     * own as in three processes: parents run in two of them, which compete for the same runs, and the children in the
     * third, so every hand-over (a child created, a parent made runnable by its last child) is found by another
     * engine's poll. Twelve hierarchies run at once and nothing is lost or run twice.
     */
    @Test
    void poll_only_engines_on_their_own_pools_hand_work_over_by_polling_and_lose_nothing(DataSource dataSource) {
        int roots = 12;
        int fanOut = 4;
        Topic<Empty> rootTopic = Topic.of("poll-share-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("poll-share-child", Empty.class);
        StepRecorder recorder = new StepRecorder();
        Saga<Empty> root = Saga.on(rootTopic, "poll-share-root-handler")
                .step("fan-out", step -> {
                    recorder.record(step);
                    for (int i = 0; i < fanOut; i++) {
                        step.launch(childTopic, new Empty());
                    }
                })
                .step("after-children", recorder::record)
                .build();
        Saga<Empty> child = Saga.on(childTopic, "poll-share-child-handler")
                .step("before-sleep", recorder::record)
                .sleep("pause", Duration.ofMillis(30))
                .step("after-sleep", recorder::record)
                .build();
        List<HikariDataSource> pools = List.of(db.newDataSource(4), db.newDataSource(4), db.newDataSource(4));
        try (CoopEngine parentsA = pollOnly(pools.get(0), "poll-share-a").register(root).start();
                CoopEngine parentsB = pollOnly(pools.get(1), "poll-share-b").register(root).start();
                CoopEngine children = pollOnly(pools.get(2), "poll-share-c").register(child).start()) {
            CoopClient client = Coop.client(dataSource); // wakes no engine: launches are found by polling too
            List<MessageId> launched = new ArrayList<>();
            for (int i = 0; i < roots; i++) {
                launched.add(client.launch(rootTopic, new Empty()));
            }
            Set<String> parentEngines = new HashSet<>();
            for (MessageId id : launched) {
                assertThat(client.awaitCompletion(id, Duration.ofSeconds(60))).as("hierarchy %s", id)
                        .isEqualTo(Outcome.COMMITTED);
                List<Event> events = client.events(id);
                Invariants.assertAll(events);
                assertThat(events).filteredOn(e -> "poll-share-child-handler".equals(e.saga())
                        && e.type() == EventType.SEEN).extracting(Event::engine).hasSize(fanOut)
                        .containsOnly(children.id());
                events.stream().filter(e -> "poll-share-root-handler".equals(e.saga()) && e.type() == EventType.SEEN)
                        .map(Event::engine).forEach(parentEngines::add);
            }
            recorder.assertEachStepRanOnce();
            assertThat(recorder.total()).as("step executions").isEqualTo(roots * 2 + roots * fanOut * 2);
            assertThat(parentEngines).as("engines that started parents").isNotEmpty()
                    .isSubsetOf(Set.of(parentsA.id(), parentsB.id()));
            for (HikariDataSource pool : pools) {
                assertThat(listenerPids(dataSource, pool.getPoolName())).as("LISTEN sessions of pool %s",
                        pool.getPoolName()).isEmpty();
            }
        }
    }

    private static CoopEngine.Builder pollOnly(DataSource pool, String name) {
        return Coop.engine(pool).name(name).notifications(false).pollInterval(Duration.ofMillis(50)).workers(2);
    }

    @Test
    void engines_keep_being_woken_after_their_listener_connections_are_killed(DataSource dataSource)
            throws SQLException {
        Topic<Empty> rootTopic = Topic.of("reconnect-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("reconnect-child", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "reconnect-root-handler")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "reconnect-child-handler")
                .step("handle", step -> {
                })
                .build();
        HikariDataSource rootPool = db.newDataSource(5);
        HikariDataSource childPool = db.newDataSource(5);
        // polling is hourly (after the probe at start): only notifications can move this hierarchy along
        try (CoopEngine roots = Coop.engine(rootPool).name("reconnect-roots").pollInterval(NEVER).workers(2)
                .register(root).start();
                CoopEngine children = Coop.engine(childPool).name("reconnect-children").pollInterval(NEVER)
                        .workers(2).register(child).start()) {
            CoopClient client = Coop.client(dataSource);
            MessageId first = client.launch(rootTopic, new Empty());
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);

            List<String> pools = List.of(rootPool.getPoolName(), childPool.getPoolName());
            Set<Integer> killed = new HashSet<>();
            for (String pool : pools) {
                Set<Integer> pids = Await.value("the listener of pool " + pool, WAIT, () -> {
                    Set<Integer> found = listenerPids(dataSource, pool);
                    return found.size() == 1 ? found : null;
                });
                killed.addAll(pids);
            }
            assertThat(terminate(dataSource, killed)).isEqualTo(2);
            for (String pool : pools) {
                Await.until("a new listener session of pool " + pool, WAIT, () -> {
                    Set<Integer> now = listenerPids(dataSource, pool);
                    return !now.isEmpty() && now.stream().noneMatch(killed::contains);
                });
            }

            List<MessageId> after = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                after.add(client.launch(rootTopic, new Empty()));
            }
            for (MessageId id : after) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                Invariants.assertAll(client.events(id));
            }
        }
    }

    @Test
    void a_step_that_emits_nothing_continues_at_once_without_a_poll(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("immediate-continuation", Empty.class);
        StepRecorder recorder = new StepRecorder();
        Saga.Builder<Empty> builder = Saga.on(topic, "immediate-continuation-handler");
        for (int i = 1; i <= 5; i++) {
            builder.step("step-" + i, recorder::record);
        }
        Saga<Empty> saga = builder.build();
        // two engines compete for the run and neither polls: the engine that ran a step re-takes the run at once.
        // Which engine runs which step is not promised (the other engine may take the run in the gap between the
        // commit and the re-take), only that no step waits for a poll and none runs twice.
        try (CoopEngine one = Coop.engine(dataSource).name("continuation-one").pollInterval(NEVER).workers(2)
                .register(saga).start();
                CoopEngine two = Coop.engine(dataSource).name("continuation-two").pollInterval(NEVER).workers(2)
                        .register(saga).start()) {
            CoopClient client = Coop.client(dataSource);
            MessageId id = client.launch(topic, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            List<Event> events = client.events(id);
            List<Event> stepEvents = events.stream()
                    .filter(e -> e.type() == EventType.SUSPENDED || e.type() == EventType.COMMITTED).toList();
            assertThat(stepEvents).extracting(Event::step).containsExactly("step-1", "step-2", "step-3", "step-4",
                    "step-5", "step-5");
            assertThat(events).filteredOn(e -> e.saga() != null).extracting(Event::engine).hasSize(7)
                    .allMatch(engine -> engine.equals(one.id()) || engine.equals(two.id()));
            recorder.assertEachStepRanOnce();
            assertThat(recorder.total()).isEqualTo(5);
        }
    }

    /**
     * A step's launches owe exactly one claim per run they made due (as a client's launch does): a chain of levels,
     * each launching the next, takes one claim per level and none that finds nothing (a search of the saga after each
     * launch would end with one). At most one claim more: the engine's first probe may still be running when the chain
     * is launched, and then searches once.
     */
    @Test
    void a_step_that_launches_owes_one_claim_per_run_it_made_due_and_no_claim_finds_nothing(DataSource dataSource) {
        Topic<Payloads.Order> topic = Topic.of("counted-launches", Payloads.Order.class);
        int depth = 6;
        Saga<Payloads.Order> level = Saga.on(topic, "counted-launches-level")
                .step("descend", step -> {
                    if (step.payload().amount() < depth) {
                        step.launch(topic, new Payloads.Order("level", step.payload().amount() + 1));
                    }
                })
                .build();
        List<String> sent = new java.util.concurrent.CopyOnWriteArrayList<>();
        List<String> closed = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (CoopEngine engine = Coop.engine(RecordingDataSource.of(dataSource, sent, closed)).pollInterval(NEVER)
                .workers(4).register(level).start()) {
            // Once LISTENing, the engine probes for what it may have missed; a probe that met the first level's run
            // would rightly search for more. Launch once that probe ran, so that only the launches owe claims.
            Await.until("the catch-up probe after LISTEN", WAIT, () -> probedSinceListening(sent, closed));
            CoopClient client = engine.client(); // wakes its engine in-process, counted
            MessageId id = client.launch(topic, new Payloads.Order("level", 1));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            long claims = sent.stream().filter(sql -> sql.contains("FOR UPDATE SKIP LOCKED")
                    && sql.contains("AS claimed_at")).count();
            assertThat(claims).as("one claim per level").isBetween((long) depth, depth + 1L);
        }
    }

    /** Whether a probe was prepared after the first LISTEN, and every probe prepared so far ran. */
    private static boolean probedSinceListening(List<String> sent, List<String> closed) {
        List<String> now = List.copyOf(sent);
        int listen = now.indexOf(now.stream().filter(sql -> sql.startsWith("LISTEN")).findFirst().orElse(null));
        return listen >= 0 && now.subList(listen, now.size()).stream().anyMatch(WakeUpTest::probe)
                && now.stream().filter(WakeUpTest::probe).count() == closed.stream().filter(WakeUpTest::probe).count();
    }

    private static boolean probe(String sql) {
        return sql.contains("WITH RECURSIVE levels");
    }

    @Test
    void an_engine_woken_by_a_commit_in_another_process_resumes_the_parent(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("cross-engine-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("cross-engine-child", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "cross-engine-root-handler")
                .step("launch", step -> {
                    for (int i = 0; i < 4; i++) {
                        step.launch(childTopic, new Empty());
                    }
                })
                .step("after", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "cross-engine-child-handler")
                .step("handle", step -> {
                })
                .build();
        try (CoopEngine roots = Coop.engine(dataSource).name("cross-roots").pollInterval(NEVER).workers(2)
                .register(root).start();
                CoopEngine children = Coop.engine(dataSource).name("cross-children").pollInterval(NEVER).workers(2)
                        .register(child).start()) {
            CoopClient client = Coop.client(dataSource);
            for (int i = 0; i < 5; i++) {
                MessageId id = client.launch(rootTopic, new Empty());
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                Invariants.assertAll(client.events(id));
            }
        }
    }

    /**
     * The listener borrows its connection from the engine's pool. When the engine stops, that connection goes back to
     * the pool and must not stay subscribed: a pooled connection that still LISTENs keeps receiving every
     * notification of the schema, which the driver buffers in memory because nobody reads them any more.
     */
    @Test
    void a_closed_engine_leaves_no_listening_connection_in_its_pool(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("unlisten-on-close", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "unlisten-on-close-handler").step("one", step -> {
        }).build();
        HikariDataSource pool = db.newDataSource(3);
        try (CoopEngine engine = Coop.engine(pool).name("unlisten").workers(1).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            Await.until("the listener to LISTEN", WAIT, () -> !listenerPids(dataSource, pool.getPoolName()).isEmpty());
        }
        // hold every connection of the pool at once, so the former listener connection is among them
        List<Connection> all = new ArrayList<>();
        try {
            for (int i = 0; i < pool.getMaximumPoolSize(); i++) {
                all.add(pool.getConnection());
            }
            List<String> stillListening = new ArrayList<>();
            for (Connection c : all) {
                try (PreparedStatement ps = c.prepareStatement("SELECT pg_listening_channels()");
                        ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        stillListening.add(rs.getString(1));
                    }
                }
            }
            assertThat(stillListening).as("channels pooled connections still listen to after the engine closed")
                    .isEmpty();
        } finally {
            for (Connection c : all) {
                c.close();
            }
        }
    }

    static Set<Integer> listenerPids(DataSource dataSource, String applicationName) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT pid FROM pg_stat_activity"
                        + " WHERE datname = current_database() AND application_name = ? AND query ILIKE 'LISTEN%'")) {
            ps.setString(1, applicationName);
            Set<Integer> pids = new HashSet<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    pids.add(rs.getInt(1));
                }
            }
            return pids;
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read pg_stat_activity", e);
        }
    }

    private static int terminate(DataSource dataSource, Set<Integer> pids) throws SQLException {
        int terminated = 0;
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
            for (int pid : pids) {
                ps.setInt(1, pid);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    terminated += rs.getBoolean(1) ? 1 : 0;
                }
            }
        }
        return terminated;
    }
}
