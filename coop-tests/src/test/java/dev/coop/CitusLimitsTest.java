package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.inspect.Event;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.CitusDatabase;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A saga's limits on a three-node Citus cluster. A limited saga is claimed there by {@code ShardedLimitedClaim}
 * (docs/guide/citus.md, "Limits and ordering keys"): the candidates read across shards, the run locked by its root,
 * the slot and the rate token taken on the coordinator in the claim's transaction. Ordering keys and idempotency
 * keys: {@code CitusKeysTest}.
 */
class CitusLimitsTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(60);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    private static List<CoopEngine> engines(int n, Saga<?>... sagas) {
        List<CoopEngine> engines = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            engines.add(CitusHappyPathTest.engine(db.dataSource()).workers(3).register(sagas).start());
        }
        return engines;
    }

    private static void closeAll(List<CoopEngine> engines) {
        engines.forEach(CoopEngine::close);
    }

    private static List<Event> events(CoopClient client, List<MessageId> ids) {
        List<Event> events = new ArrayList<>();
        ids.forEach(id -> events.addAll(client.events(id)));
        return events;
    }

    private static void work(StepContext<Empty> step) throws SQLException {
        try (Statement st = step.connection().createStatement()) {
            st.execute("SELECT pg_sleep(0.005)"); // a few ms of database work: steps of engines overlap
        }
    }

    @Test
    void a_concurrency_limit_of_2_never_has_a_third_run_in_a_step_across_three_engines() {
        Topic<Empty> topic = Topic.of("citus-limited-concurrency", Empty.class);
        AtomicInteger inStep = new AtomicInteger();
        AtomicInteger mostAtOnce = new AtomicInteger();
        StepBody<Empty> counted = step -> {
            mostAtOnce.accumulateAndGet(inStep.incrementAndGet(), Math::max);
            try {
                work(step);
            } finally {
                inStep.decrementAndGet();
            }
        };
        Saga<Empty> saga = Saga.on(topic, "citus-limited-concurrency").concurrency(2).step("one", counted)
                .step("two", counted).build();
        List<CoopEngine> engines = engines(3, saga);
        try {
            CoopClient client = engines.getFirst().client();
            List<MessageId> ids = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                ids.add(client.launch(topic, new Empty()));
            }
            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            List<Event> events = events(client, ids);
            List<SagaLimitsTest.StepSpan> steps = SagaLimitsTest.stepEnds(events, "citus-limited-concurrency");
            assertThat(steps).hasSize(60);
            assertThat(SagaLimitsTest.mostOverlapping(steps)).as("steps overlapping in the log").isLessThanOrEqualTo(2);
            assertThat(mostAtOnce.get()).as("bodies at once").isBetween(1, 2);
            assertThat(events).extracting(Event::type).doesNotContain(EventType.ROLLING_BACK);
            Invariants.assertAll(events);
        } finally {
            closeAll(engines);
        }
    }

    @Test
    void a_rate_limit_never_lets_more_than_n_steps_start_in_any_window_of_the_period() {
        Topic<Empty> topic = Topic.of("citus-limited-rate", Empty.class);
        Duration period = Duration.ofMillis(400);
        Saga<Empty> saga = Saga.on(topic, "citus-limited-rate").rateLimit(3, period).step("one", step -> {
        }).step("two", step -> {
        }).build();
        List<CoopEngine> engines = engines(2, saga);
        try {
            CoopClient client = engines.getFirst().client();
            List<MessageId> ids = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                ids.add(client.launch(topic, new Empty()));
            }
            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            List<Event> events = events(client, ids);
            List<OffsetDateTime> starts = SagaLimitsTest.stepEnds(events, "citus-limited-rate").stream()
                    .map(SagaLimitsTest.StepSpan::start).sorted().toList();
            assertThat(starts).hasSize(12);
            for (int i = 0; i + 3 < starts.size(); i++) { // the 4th start after any start is a period later or more
                assertThat(Duration.between(starts.get(i), starts.get(i + 3))).as("starts %d and %d", i, i + 3)
                        .isGreaterThanOrEqualTo(period);
            }
            Invariants.assertAll(events);
        } finally {
            closeAll(engines);
        }
    }

    @Test
    void a_limited_run_that_fails_and_rolls_back_or_is_cancelled_frees_its_slot() throws Exception {
        Topic<Empty> topic = Topic.of("citus-limited-one", Empty.class);
        AtomicBoolean fail = new AtomicBoolean(true);
        StepGate held = new StepGate();
        AtomicBoolean hold = new AtomicBoolean(false);
        Saga<Empty> saga = Saga.on(topic, "citus-limited-one").concurrency(1)
                .step("one", step -> {
                    if (hold.getAndSet(false)) {
                        held.pass();
                    }
                    if (fail.getAndSet(false)) {
                        throw new IllegalStateException("the first run fails");
                    }
                })
                .step("two", step -> {
                })
                .build();
        List<CoopEngine> engines = engines(2, saga);
        try {
            CoopClient client = engines.getFirst().client();
            MessageId failing = client.launch(topic, new Empty());
            assertThat(client.awaitCompletion(failing, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            MessageId next = client.launch(topic, new Empty());
            assertThat(client.awaitCompletion(next, WAIT)).as("the run after a rollback").isEqualTo(Outcome.COMMITTED);

            hold.set(true);
            MessageId cancelled = client.launch(topic, new Empty());
            held.awaitArrivals(1, WAIT);
            client.cancel(cancelled, "no longer needed");
            held.open();
            assertThat(client.awaitCompletion(cancelled, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            MessageId after = client.launch(topic, new Empty());
            assertThat(client.awaitCompletion(after, WAIT)).as("the run after a cancel").isEqualTo(Outcome.COMMITTED);
            Invariants.assertAll(events(client, List.of(failing, next, cancelled, after)));
        } finally {
            closeAll(engines);
        }
    }

    /**
     * Two-phase commits of a limited saga's steps (rows added to the coordinator's {@code pg_dist_transaction}, its
     * recovery held back by a lock, as {@code CitusOnePhaseCommitTest} counts): a concurrency limit alone takes an
     * advisory lock on the coordinator and writes nothing there; a rate limit moves a token of the coordinator's
     * {@code rate_token} in the step's transaction.
     */
    @Test
    void two_phase_commits_of_limited_steps_are_counted() throws Exception {
        Map<String, Saga<Empty>> sagas = new LinkedHashMap<>();
        sagas.put("a concurrency limit", threeSteps("citus-limited-2pc-slots", b -> b.concurrency(2)));
        // 50 a second: a token moved in each step's transaction (fewer than 128: no lease, RateLease.size)
        sagas.put("a rate limit", threeSteps("citus-limited-2pc-rate", b -> b.rateLimit(50, Duration.ofSeconds(1))));
        // 1000 a second: the engine leases tokens in a transaction of its own, the steps start on the lease
        sagas.put("a leased rate limit",
                threeSteps("citus-limited-2pc-lease", b -> b.rateLimit(1000, Duration.ofSeconds(1))));
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource())
                .register(sagas.values().toArray(Saga<?>[]::new)).start();
                Connection recovery = db.cluster().connect(db.cluster().ports().get(0), db.databaseName());
                Statement st = recovery.createStatement()) {
            CoopClient client = engine.client();
            for (Saga<Empty> saga : sagas.values()) { // warm-up
                client.awaitCompletion(client.launch(saga.topic(), new Empty()), WAIT);
            }
            recovery.setAutoCommit(false);
            st.execute("LOCK TABLE pg_dist_transaction IN SHARE UPDATE EXCLUSIVE MODE");
            Map<String, Long> twoPhase = new LinkedHashMap<>();
            for (Map.Entry<String, Saga<Empty>> saga : sagas.entrySet()) {
                long before = prepared();
                MessageId id = client.launch(saga.getValue().topic(), new Empty());
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                twoPhase.put(saga.getKey(), prepared() - before);
            }
            recovery.rollback();
            System.out.println("2PC of a launch and three steps, by limit: " + twoPhase);
            assertThat(twoPhase).allSatisfy((limit, n) -> assertThat(n).as("two-phase commits with " + limit)
                    .isZero());
        }
    }

    private static Saga<Empty> threeSteps(String name, java.util.function.UnaryOperator<Saga.Builder<Empty>> limit) {
        return limit.apply(Saga.on(Topic.of(name, Empty.class), name)).step("s1", step -> {
        }).step("s2", step -> {
        }).step("s3", step -> {
        }).build();
    }

    static long prepared() throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                Statement st = c.createStatement();
                java.sql.ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_dist_transaction")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
