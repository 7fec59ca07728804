package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Saga limits across engines: at most N runs of a saga execute a step at once, at most N steps start per period,
 * checked from the log (each step's start and the time its events were written); a limited saga neither fails its
 * waiting runs nor stalls other sagas, and a crashed engine's slot frees with its connection.
 */
class SagaLimitsTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(90);
    static final int ENGINES = 3;
    static final int WORKERS = 4;

    private final List<CoopEngine> engines = new ArrayList<>();

    @AfterEach
    void closeEngines() {
        engines.forEach(CoopEngine::close);
    }

    private void startEngines(String name, Saga<?>... sagas) {
        for (int i = 0; i < ENGINES; i++) {
            HikariDataSource pool = db.newDataSource(WORKERS + 2);
            engines.add(Coop.engine(pool).name(name + "-" + i).workers(WORKERS).pollInterval(Duration.ofMillis(200))
                    .register(sagas).start());
        }
    }

    /** A step of 5 ms of database work: long enough for steps of different engines to overlap. */
    private static void work(StepContext<Empty> step) throws SQLException {
        try (Statement st = step.connection().createStatement()) {
            st.execute("SELECT pg_sleep(0.005)");
        }
    }

    @Test
    void a_concurrency_limit_of_3_never_sees_a_fourth_step_running_across_three_engines_under_load(
            DataSource dataSource) throws Exception {
        Topic<Empty> limitedTopic = Topic.of("limits-concurrency", Empty.class);
        Topic<Empty> freeTopic = Topic.of("limits-unlimited", Empty.class);
        AtomicInteger inStep = new AtomicInteger();
        AtomicInteger mostAtOnce = new AtomicInteger();
        Saga<Empty> limited = Saga.on(limitedTopic, "limits-concurrency-saga")
                .concurrency(3)
                .step("one", step -> {
                    mostAtOnce.accumulateAndGet(inStep.incrementAndGet(), Math::max);
                    try {
                        work(step);
                    } finally {
                        inStep.decrementAndGet();
                    }
                })
                .step("two", SagaLimitsTest::work)
                .build();
        Saga<Empty> free = Saga.on(freeTopic, "limits-unlimited-saga").step("go", step -> {
        }).build();
        assertThat(limited.concurrency()).isEqualTo(3);
        startEngines("concurrency", limited, free);
        CoopClient client = Coop.client(dataSource);
        List<MessageId> limitedOnes = new ArrayList<>();
        for (int i = 0; i < 120; i++) {
            limitedOnes.add(client.launch(limitedTopic, new Empty()));
        }
        // the limited saga has a backlog; the unlimited saga's runs finish meanwhile
        List<MessageId> freeOnes = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            freeOnes.add(client.launch(freeTopic, new Empty()));
        }
        for (MessageId id : freeOnes) {
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        assertThat(countRuns(dataSource, "limits-concurrency-saga", "status = 'RUNNABLE'"))
                .as("limited runs still waiting when the unlimited saga finished").isPositive();
        for (MessageId id : limitedOnes) {
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }

        List<Event> events = CoopTables.of(dataSource).allEvents();
        List<StepSpan> steps = stepEnds(events, "limits-concurrency-saga");
        assertThat(steps).hasSize(240);
        assertThat(mostOverlapping(steps)).as("steps overlapping in the log").isLessThanOrEqualTo(3);
        assertThat(mostAtOnce.get()).isLessThanOrEqualTo(3);
        assertThat(steps.stream().map(StepSpan::engine).distinct().count()).as("engines that ran steps").isEqualTo(3);
        assertNoFailureNorRetry(dataSource, events, "limits-concurrency-saga");
        Invariants.assertAll(events);
    }

    @Test
    void a_rate_limit_never_lets_more_than_n_steps_start_in_any_window_of_the_period(DataSource dataSource)
            throws Exception {
        Topic<Empty> topic = Topic.of("limits-rate", Empty.class);
        Duration period = Duration.ofMillis(400);
        Saga<Empty> saga = Saga.on(topic, "limits-rate-saga")
                .rateLimit(5, period)
                .step("one", step -> {
                })
                .step("two", step -> {
                })
                .build();
        startEngines("rate", saga);
        CoopClient client = Coop.client(dataSource);
        List<MessageId> ids = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            ids.add(client.launch(topic, new Empty()));
        }
        for (MessageId id : ids) {
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        List<Event> events = CoopTables.of(dataSource).allEvents();
        List<OffsetDateTime> starts = stepEnds(events, "limits-rate-saga").stream().map(StepSpan::start).sorted()
                .toList();
        assertThat(starts).hasSize(40);
        for (int i = 0; i + 5 < starts.size(); i++) { // the 6th start after any start is a period later or more
            assertThat(Duration.between(starts.get(i), starts.get(i + 5))).as("starts %d and %d", i, i + 5)
                    .isGreaterThanOrEqualTo(period);
        }
        assertThat(Duration.between(starts.getFirst(), starts.getLast()))
                .as("40 starts at 5 per 400 ms take at least 7 periods").isGreaterThanOrEqualTo(period.multipliedBy(7));
        assertNoFailureNorRetry(dataSource, events, "limits-rate-saga");
        Invariants.assertAll(events);
    }

    @Test
    void an_engine_that_crashes_while_holding_a_slot_frees_it(DataSource dataSource) throws Exception {
        Topic<Empty> topic = Topic.of("limits-crash", Empty.class);
        StepGate gate = new StepGate();
        AtomicInteger attempts = new AtomicInteger();
        Map<Integer, Integer> backendOfAttempt = new ConcurrentHashMap<>();
        Saga<Empty> saga = Saga.on(topic, "limits-crash-saga")
                .concurrency(1)
                .step("hold", step -> {
                    int attempt = attempts.incrementAndGet();
                    try (Statement st = step.connection().createStatement();
                            ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                        rs.next();
                        backendOfAttempt.put(attempt, rs.getInt(1));
                    }
                    if (attempt == 1) {
                        gate.pass();
                    }
                })
                .build();
        CoopClient client = Coop.client(dataSource);
        try {
            HikariDataSource firstPool = db.newDataSource(4);
            CoopEngine first = Coop.engine(firstPool).name("slot-holder").workers(1).register(saga).start();
            engines.add(first);
            MessageId held = client.launch(topic, new Empty());
            gate.awaitArrivals(1, WAIT);
            HikariDataSource secondPool = db.newDataSource(4);
            CoopEngine second = Coop.engine(secondPool).name("slot-taker").workers(2)
                    .pollInterval(Duration.ofMillis(50)).register(saga).start();
            engines.add(second);
            MessageId other = client.launch(topic, new Empty());
            assertThat(client.tree(other).runs().getFirst().status()).isEqualTo(RunStatus.RUNNABLE);
            // awaited: while the other engine's claim tries the run (and is refused its slot) it holds the run's lock,
            // and the tree shows a locked run as running, with no reason to wait
            dev.coop.test.Await.until("the waiting run's reason", WAIT,
                    () -> "waiting for a slot (1 of 1 busy)".equals(reasonOf(client, other)));

            terminate(dataSource, backendOfAttempt.get(1)); // the slot holder's connection dies with its slot
            assertThat(client.awaitCompletion(other, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(held, WAIT)).isEqualTo(Outcome.COMMITTED);
        } finally {
            gate.open();
        }
    }

    @Test
    void claiming_a_limited_saga_stays_an_index_probe_on_a_backlog(DataSource dataSource) throws Exception {
        Topic<Empty> topic = Topic.of("limits-plan", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "limits-plan-saga").concurrency(8).rateLimit(1000, Duration.ofSeconds(1))
                .step("go", step -> {
                }).build();
        try (CoopEngine engine = Coop.engine(db.newDataSource(4)).workers(1).register(saga).start()) {
            assertThat(engine.id()).isNotNull(); // registered with its limits; its runs wait for the next engine
        }
        CoopClient client = Coop.client(dataSource);
        for (int i = 0; i < 2_000; i++) {
            client.launch(topic, new Empty());
        }
        dev.coop.internal.store.Store store = new dev.coop.internal.store.Store(
                new dev.coop.internal.store.SchemaName("coop"),
                dev.coop.internal.store.Time.DATABASE);
        List<String> plan = new ArrayList<>();
        try (Connection c = dataSource.getConnection()) {
            store.limited(new dev.coop.internal.store.SagaLimits(store.schema()).limited(c, List.of(saga.name())));
            try (Statement st = c.createStatement()) {
                st.execute("ANALYZE coop.run");
            }
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                    + store.claimSql(saga.name()))) {
                store.bindClaim(ps, saga.name(), saga.version(), "explain"); // the run, its slot and token
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        plan.add(rs.getString(1));
                    }
                }
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
        System.out.println("Claim of a limited saga, 2,000 runnable runs:\n" + String.join("\n", plan));
        String text = String.join("\n", plan);
        assertThat(text).contains("Index Scan using run_runnable on run r", "Index Scan using run_pkey on run r")
                .doesNotContain("Seq Scan on run");
        assertThat(plan).anySatisfy(line -> assertThat(line).contains("Index Scan using run_runnable")
                .contains("rows=1 loops=1"));
    }

    @Test
    void the_last_engine_to_register_a_saga_sets_its_limits_for_every_engine(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("limits-registry", Empty.class);
        Saga<Empty> three = Saga.on(topic, "limits-registry-saga").concurrency(3).step("go", step -> {
        }).build();
        Saga<Empty> unlimited = Saga.on(topic, "limits-registry-saga").step("go", step -> {
        }).build();
        try (CoopEngine first = Coop.engine(db.newDataSource(4)).workers(1).register(three).start()) {
            assertThat(registered(dataSource, "limits-registry-saga")).isEqualTo("3/null/null");
            try (CoopEngine second = Coop.engine(db.newDataSource(4)).workers(1).register(unlimited).start()) {
                assertThat(registered(dataSource, "limits-registry-saga")).isEqualTo("null/null/null");
            }
        }
    }

    @Test
    void invalid_limits_are_refused_with_the_value() {
        Topic<Empty> topic = Topic.of("limits-invalid", Empty.class);
        for (int runs : new int[]{0, -1, 1025}) {
            assertThatThrownBy(() -> Saga.on(topic, "limits-invalid-saga").concurrency(runs))
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessage("concurrency of saga 'limits-invalid-saga' must be between 1 and 1024, was " + runs);
        }
        assertThatThrownBy(() -> Saga.on(topic, "limits-invalid-saga").concurrency(2).concurrency(3))
                .isInstanceOf(CoopValidationException.class)
                .hasMessage("concurrency of saga 'limits-invalid-saga' was already set to 2");
        for (int starts : new int[]{0, -5, 100_001}) {
            assertThatThrownBy(() -> Saga.on(topic, "limits-invalid-saga").rateLimit(starts, Duration.ofSeconds(1)))
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessage("rateLimit of saga 'limits-invalid-saga' must allow between 1 and 100000 starts, was "
                            + starts);
        }
        assertThatThrownBy(() -> Saga.on(topic, "limits-invalid-saga").rateLimit(5, null))
                .isInstanceOf(CoopValidationException.class)
                .hasMessage("rateLimit of saga 'limits-invalid-saga' needs a period, was null");
        for (Duration period : new Duration[]{Duration.ZERO, Duration.ofMillis(-1), Duration.ofNanos(999_999),
                Duration.ofDays(1).plusMillis(1)}) {
            assertThatThrownBy(() -> Saga.on(topic, "limits-invalid-saga").rateLimit(5, period))
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessage("rateLimit period of saga 'limits-invalid-saga' must be between 1 ms and 1 day, was "
                            + period);
        }
        assertThatThrownBy(() -> Saga.on(topic, "limits-invalid-saga").rateLimit(5, Duration.ofSeconds(1))
                .rateLimit(6, Duration.ofSeconds(1)))
                .isInstanceOf(CoopValidationException.class)
                .hasMessage("rateLimit of saga 'limits-invalid-saga' was already set to 5 per PT1S");
    }

    /** A step transaction of a run, from the log: when it started (its claim) and when its events were written. */
    record StepSpan(String engine, OffsetDateTime start, OffsetDateTime written) {
    }

    /** The step transactions of {@code saga}: its events with a start, one span per run and start. */
    static List<StepSpan> stepEnds(List<Event> events, String saga) {
        Map<String, StepSpan> spans = new java.util.LinkedHashMap<>();
        for (Event e : events) {
            if (saga.equals(e.saga()) && e.startedAt() != null) {
                spans.merge(e.lineage().last() + "@" + e.startedAt(),
                        new StepSpan(e.engine(), e.startedAt(), e.createdAt()),
                        (a, b) -> b.written().isAfter(a.written()) ? b : a);
            }
        }
        return List.copyOf(spans.values());
    }

    /**
     * The most step transactions in progress at one instant, from the log: each ran at least from its start (the
     * claim) to the time its events were written (before its commit, on the database's clock like the start).
     */
    static int mostOverlapping(List<StepSpan> steps) {
        record Edge(OffsetDateTime at, int delta) {
        }
        List<Edge> edges = new ArrayList<>();
        for (StepSpan s : steps) {
            assertThat(s.written()).isAfterOrEqualTo(s.start());
            edges.add(new Edge(s.start(), 1));
            edges.add(new Edge(s.written(), -1));
        }
        // at the same instant an end comes before a start: touching intervals do not overlap
        edges.sort(Comparator.comparing(Edge::at).thenComparingInt(Edge::delta));
        int now = 0;
        int most = 0;
        for (Edge edge : edges) {
            now += edge.delta();
            most = Math.max(most, now);
        }
        return most;
    }

    /** No run failed, rolled back, parked or counted a retry while it waited for its limits. */
    private static void assertNoFailureNorRetry(DataSource dataSource, List<Event> events, String saga)
            throws SQLException {
        assertThat(events).extracting(Event::type).doesNotContain(EventType.ROLLING_BACK, EventType.ROLLED_BACK);
        assertThat(countRuns(dataSource, saga, "true")).isPositive();
        assertThat(countRuns(dataSource, saga, "retries > 0 OR attempt > 1 OR status <> 'COMMITTED'")).isZero();
    }

    private static int countRuns(DataSource dataSource, String saga, String condition) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT count(*) FROM coop.run WHERE saga = ? AND (" + condition + ")")) { // test constants
            ps.setString(1, saga);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private static String reasonOf(CoopClient client, MessageId message) {
        return client.tree(message).runs().getFirst().waitingFor();
    }

    private static String registered(DataSource dataSource, String saga) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT concurrency || '', rate_limit || '', rate_period_ms || '' FROM coop.saga_registration"
                                + " WHERE saga = ?")) {
            ps.setString(1, saga);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1) + "/" + rs.getString(2) + "/" + rs.getString(3);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void terminate(DataSource dataSource, int pid) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
            ps.setInt(1, pid);
            ps.executeQuery().close();
        }
    }
}
