package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.OrderingKeyTest.Transfer;
import dev.coop.Payloads.Empty;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunView;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Launch keys on a three-node Citus cluster (schema version 31, docs/guide/citus.md "Limits and ordering keys"): an
 * ordering key's turns are the coordinator's {@code key_turn}, taken in the launch's transaction and released in the
 * transaction that ends the run; an idempotency key is the coordinator's {@code launch_key}, inserted in the launch's
 * transaction. The hierarchies of one key are on different shards.
 */
class CitusKeysTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(60);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    static CoopEngine.Builder engine() {
        return CitusHappyPathTest.engine(db.dataSource()).workers(4);
    }

    @Test
    void runs_of_one_key_from_many_hierarchies_run_one_at_a_time_in_launch_order() throws Exception {
        Topic<Transfer> topic = Topic.of("citus-okey-ledger", Transfer.class);
        Topic<Transfer> auditTopic = Topic.of("citus-okey-audit", Transfer.class);
        // two transactions, the last launching a child whose count-off commits the keyed run (its key released there)
        Saga<Transfer> ledger = Saga.on(topic, "citus-okey-ledger-saga")
                .step("debit", step -> {
                })
                .step("credit", step -> step.launch(auditTopic, step.payload()))
                .build();
        Saga<Transfer> audit = Saga.on(auditTopic, "citus-okey-audit-saga").step("write", step -> {
        }).build();
        try (CoopEngine one = engine().name("citus-okey-1").register(ledger, audit).start();
                CoopEngine two = engine().name("citus-okey-2").register(ledger, audit).start()) {
            CoopClient client = one.client();
            List<List<MessageId>> byKey = List.of(new ArrayList<>(), new ArrayList<>());
            List<MessageId> free = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                for (int k = 0; k < 2; k++) {
                    byKey.get(k).add(client.launch(topic, new Transfer("acct-" + k, i),
                            LaunchOptions.none().orderingKey("acct-" + k)));
                }
                free.add(client.launch(topic, new Transfer("free", i)));
            }
            for (List<MessageId> ids : byKey) {
                assertThat(ids.stream().map(id -> shardOf(id)).distinct().count()).as("hierarchies on shards")
                        .isGreaterThan(1);
            }
            for (MessageId id : free) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            for (List<MessageId> ids : byKey) {
                long lastEnd = 0;
                List<Event> before = List.of();
                for (int i = 0; i < ids.size(); i++) {
                    assertThat(client.awaitCompletion(ids.get(i), WAIT)).isEqualTo(Outcome.COMMITTED);
                    List<Event> events = client.events(ids.get(i));
                    Invariants.assertAll(events);
                    long start = first(events, EventType.SEEN);
                    long end = last(events, EventType.COMMITTED);
                    assertThat(start).as("run %d of its key started after the one before it ended: %s then %s", i,
                            before, events).isGreaterThan(lastEnd);
                    lastEnd = end;
                    before = events;
                }
            }
            assertThat(turnsLeft()).isZero();
        }
    }

    @Test
    void a_failed_a_cancelled_and_a_cancelled_held_run_each_release_their_key() throws Exception {
        Topic<Transfer> topic = Topic.of("citus-okey-release", Transfer.class);
        StepGate gate = new StepGate(WAIT);
        Saga<Transfer> saga = Saga.on(topic, "citus-okey-release-saga").step("hold", step -> {
            if (step.payload().n() < 0) {
                throw new IllegalStateException("refused transfer");
            }
            if (step.payload().n() >= 100) {
                gate.pass();
            }
        }).build();
        try (CoopEngine engine = engine().register(saga).start()) {
            CoopClient client = engine.client();
            LaunchOptions key = LaunchOptions.none().orderingKey("acct-r");
            // a run that fails rolls back, and the key goes on
            MessageId failing = client.launch(topic, new Transfer("acct-r", -1), key);
            MessageId next = client.launch(topic, new Transfer("acct-r", 1), key);
            assertThat(client.awaitCompletion(failing, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.awaitCompletion(next, WAIT)).isEqualTo(Outcome.COMMITTED);

            // the holder in a step; a held run cancelled leaves the queue, the one behind it waits for the holder
            MessageId holder = client.launch(topic, new Transfer("acct-r", 100), key);
            gate.awaitArrivals(1, WAIT);
            MessageId cancelledHeld = client.launch(topic, new Transfer("acct-r", 2), key);
            MessageId third = client.launch(topic, new Transfer("acct-r", 101), key);
            assertThat(client.statuses(cancelledHeld)).containsExactly(RunStatus.HELD);
            assertThat(client.cancel(cancelledHeld, "not needed any more")).isEqualTo(CancelResult.REQUESTED);
            assertThat(client.awaitCompletion(cancelledHeld, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.statuses(third)).containsExactly(RunStatus.HELD);
            // the holder cancelled while its step runs: it rolls back, and the next turn is the third's
            assertThat(client.cancel(holder, "stop")).isEqualTo(CancelResult.REQUESTED);
            gate.open();
            assertThat(client.awaitCompletion(holder, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.awaitCompletion(third, WAIT)).isEqualTo(Outcome.COMMITTED);
            long holderEnd = client.events(holder).stream().mapToLong(Event::id).max().orElseThrow();
            assertThat(first(client.events(third), EventType.SEEN)).as("the third started after the holder ended")
                    .isGreaterThan(holderEnd);
            assertThat(turnsLeft()).isZero();
        } finally {
            gate.open();
        }
    }

    @Test
    void two_launches_with_one_idempotency_key_give_one_message_also_from_two_threads_at_once() throws Exception {
        Topic<Transfer> topic = Topic.of("citus-idem", Transfer.class);
        Saga<Transfer> saga = Saga.on(topic, "citus-idem-saga").step("go", step -> {
        }).build();
        try (CoopEngine engine = engine().register(saga).start()) {
            CoopClient client = engine.client();
            LaunchOptions key = LaunchOptions.none().idempotencyKey("order-1");
            MessageId first = client.launch(topic, new Transfer("a", 1), key);
            MessageId again = client.launch(topic, new Transfer("a", 2), key);
            assertThat(again).isEqualTo(first);
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(messagesWithKey("citus-idem", "order-1")).isEqualTo(1);

            ExecutorService threads = Executors.newFixedThreadPool(2);
            try {
                for (int round = 0; round < 5; round++) {
                    LaunchOptions racing = LaunchOptions.none().idempotencyKey("race-" + round);
                    CountDownLatch start = new CountDownLatch(1);
                    List<Future<MessageId>> launches = new ArrayList<>();
                    for (int t = 0; t < 2; t++) {
                        int n = t;
                        launches.add(threads.submit(() -> {
                            start.await();
                            return client.launch(topic, new Transfer("r", n), racing);
                        }));
                    }
                    start.countDown();
                    MessageId a = launches.get(0).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    MessageId b = launches.get(1).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    assertThat(a).isEqualTo(b);
                    assertThat(messagesWithKey("citus-idem", "race-" + round)).isEqualTo(1);
                    assertThat(client.awaitCompletion(a, WAIT)).isEqualTo(Outcome.COMMITTED);
                }
            } finally {
                threads.shutdownNow();
            }
        }
    }

    @Test
    void a_step_launches_with_an_ordering_key_and_an_idempotency_key() throws Exception {
        Topic<Transfer> childTopic = Topic.of("citus-step-keys-child", Transfer.class);
        Topic<Transfer> parentTopic = Topic.of("citus-step-keys-parent", Transfer.class);
        StepGate gate = new StepGate(WAIT);
        Saga<Transfer> child = Saga.on(childTopic, "citus-step-keys-child-saga").step("go", step -> gate.pass())
                .build();
        Saga<Transfer> parent = Saga.on(parentTopic, "citus-step-keys-parent-saga")
                .step("launch", step -> step.launch(childTopic, step.payload(), LaunchOptions.none()
                        .orderingKey("acct-s").idempotencyKey("child-" + step.payload().account())))
                .build();
        try (CoopEngine engine = engine().register(parent, child).start()) {
            CoopClient client = engine.client();
            MessageId p1 = client.launch(parentTopic, new Transfer("x", 1));
            gate.awaitArrivals(1, WAIT);
            MessageId p2 = client.launch(parentTopic, new Transfer("y", 2)); // its child waits for x's
            MessageId p3 = client.launch(parentTopic, new Transfer("x", 3)); // x's key: no second child
            Await.until("the second child to be held", WAIT, () -> heldRuns("citus-step-keys-child-saga") == 1);
            assertThat(gate.arrivals()).isEqualTo(1);
            gate.open();
            for (MessageId p : List.of(p1, p2, p3)) {
                assertThat(client.awaitCompletion(p, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            assertThat(gate.arrivals()).isEqualTo(2);
            assertThat(messagesWithKey("citus-step-keys-child", "child-x")).isEqualTo(1);
            assertThat(turnsLeft()).isZero();
        } finally {
            gate.open();
        }
    }

    @Test
    void a_parent_that_gives_up_settles_its_held_child_and_the_key_goes_on_held_runs_shown_behind_the_holder()
            throws Exception {
        Topic<Transfer> topic = Topic.of("citus-okey-deadline", Transfer.class);
        Topic<Transfer> parentTopic = Topic.of("citus-okey-deadline-parent", Transfer.class);
        StepGate gate = new StepGate(WAIT);
        Saga<Transfer> keyed = Saga.on(topic, "citus-okey-deadline-saga").step("hold", step -> {
            if (step.payload().n() == 1) {
                gate.pass();
            }
        }).build();
        Saga<Transfer> parent = Saga.on(parentTopic, "citus-okey-deadline-parent-saga")
                .step("launch", step -> step.launch(topic, step.payload(),
                        LaunchOptions.none().orderingKey(step.payload().account())))
                .step("after", step -> {
                })
                .build();
        try (CoopEngine engine = engine().register(keyed, parent).start()) {
            CoopClient client = engine.client();
            LaunchOptions key = LaunchOptions.none().orderingKey("acct-d");
            MessageId holder = client.launch(topic, new Transfer("acct-d", 1), key);
            gate.awaitArrivals(1, WAIT);
            // the parent's child is held behind the gated run; the parent's deadline passes first, and the parent
            // settles its unstarted child (RootChildren), which leaves the key's queue
            MessageId waiting = client.launch(parentTopic, new Transfer("acct-d", 2), LaunchOptions.none()
                    .context(CooperationContext.of(Deadlines.HAPPY_PATH,
                            Deadline.at(client.now().plusSeconds(2), "test"))));
            assertThat(client.awaitCompletion(waiting, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            RunView child = client.tree(waiting).runs().get(0).children().get(0);
            assertThat(child.status()).isEqualTo(RunStatus.ROLLED_BACK);
            assertThat(child.startedAt()).isNull();
            MessageId next = client.launch(topic, new Transfer("acct-d", 3), key);
            assertThat(client.statuses(next)).containsExactly(RunStatus.HELD);
            RunView held = client.tree(next).runs().get(0);
            assertThat(held.ordering().heldBehind()).as("the run ahead, on another shard")
                    .isEqualTo(client.tree(holder).runs().get(0).runId());
            gate.open();
            assertThat(client.awaitCompletion(holder, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(next, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(turnsLeft()).isZero();
        } finally {
            gate.open();
        }
    }

    /**
     * Two-phase commits (rows added to the coordinator's {@code pg_dist_transaction}, one per prepared connection,
     * its recovery held back by a lock as in {@code CitusOnePhaseCommitTest}): a keyed launch writes the
     * coordinator's table (a Citus local table) and the hierarchy's worker, so it commits in two phases, as does the
     * keyed run's end (its release); an idempotent launch too; a launch that finds its key taken writes no worker.
     */
    @Test
    void keys_commit_in_two_phases_only_at_the_launch_and_the_keyed_runs_end() throws Exception {
        Topic<Empty> topic = Topic.of("citus-keys-2pc", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-keys-2pc").step("s1", step -> {
        }).step("s2", step -> {
        }).step("s3", step -> {
        }).build();
        try (CoopEngine engine = engine().register(saga).start();
                Connection recovery = db.cluster().connect(db.cluster().ports().get(0), db.databaseName());
                java.sql.Statement st = recovery.createStatement()) {
            recovery.setAutoCommit(false);
            st.execute("LOCK TABLE pg_dist_transaction IN SHARE UPDATE EXCLUSIVE MODE");
            CoopClient client = engine.client();
            // warmed up: the engine's start-up writes (the registry, reference tables) are behind it
            assertThat(client.awaitCompletion(client.launch(topic, new Empty()), WAIT)).isEqualTo(Outcome.COMMITTED);
            long before = query("SELECT count(*) FROM pg_dist_transaction");
            MessageId keyed = client.launch(topic, new Empty(), LaunchOptions.none().orderingKey("k-2pc"));
            long launched = query("SELECT count(*) FROM pg_dist_transaction");
            assertThat(client.awaitCompletion(keyed, WAIT)).isEqualTo(Outcome.COMMITTED);
            long ran = query("SELECT count(*) FROM pg_dist_transaction");
            MessageId idem = client.launch(topic, new Empty(), LaunchOptions.none().idempotencyKey("i-2pc"));
            long idemLaunched = query("SELECT count(*) FROM pg_dist_transaction");
            assertThat(client.launch(topic, new Empty(), LaunchOptions.none().idempotencyKey("i-2pc")))
                    .isEqualTo(idem);
            long again = query("SELECT count(*) FROM pg_dist_transaction");
            assertThat(client.awaitCompletion(idem, WAIT)).isEqualTo(Outcome.COMMITTED);
            System.out.printf("two-phase commits: keyed launch %d, its three steps %d, idempotent launch %d,"
                    + " its repeat %d%n", launched - before, ran - launched, idemLaunched - ran, again - idemLaunched);
            assertThat(launched - before).as("the keyed launch").isPositive();
            assertThat(ran - launched).as("the keyed run's steps: the last, which releases").isPositive();
            assertThat(idemLaunched - ran).as("the idempotent launch").isPositive();
            assertThat(again - idemLaunched).as("the repeat, which writes no worker").isZero();
            recovery.rollback();
        }
    }

    private static long first(List<Event> events, EventType type) {
        return events.stream().filter(e -> e.type() == type).mapToLong(Event::id).min().orElseThrow();
    }

    private static long last(List<Event> events, EventType type) {
        return events.stream().filter(e -> e.type() == type && e.saga().equals("citus-okey-ledger-saga"))
                .mapToLong(Event::id).max().orElseThrow();
    }

    private static long shardOf(MessageId id) {
        return query("SELECT get_shard_id_for_distribution_column('coop.run', ?::uuid)", id.value().toString());
    }

    private static long turnsLeft() {
        return query("SELECT count(*) FROM coop.key_turn");
    }

    private static long heldRuns(String saga) {
        return query("SELECT count(*) FROM coop.run WHERE saga = ? AND status = 'HELD'", saga);
    }

    /** The messages of a topic with a key, checked against the key's one row on the coordinator. */
    private static long messagesWithKey(String topic, String key) {
        assertThat(query("SELECT count(*) FROM coop.launch_key WHERE topic = ? AND idempotency_key = ?", topic, key))
                .as("launch_key rows of %s", key).isEqualTo(1);
        return query("SELECT count(*) FROM coop.message WHERE topic = ? AND idempotency_key = ?", topic, key);
    }

    private static long query(String sql, String... values) {
        try (Connection c = db.dataSource().getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < values.length; i++) {
                ps.setString(i + 1, values[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
