package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import dev.coop.test.StepRecorder;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Several engines on one database, each with a pool of its own as if in separate JVMs: every hierarchy completes, no
 * step body runs twice for one run, the step barrier holds across engines, and a run is taken over as soon as the
 * connection of the engine executing it is gone.
 */
class ClusterTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(60);

    static final int ENGINES = 3;
    static final int WORKERS = 4;
    static final int CLIENT_THREADS = 4;
    static final int HIERARCHIES = 150;
    static final int CHILD_MESSAGES = 3;
    static final int CHILD_SAGAS = 2;
    /** One root run, each child message handled by each child saga, each child run launching one grandchild. */
    static final int RUNS_PER_HIERARCHY = 1 + 2 * CHILD_MESSAGES * CHILD_SAGAS;
    /** Root: 2 steps; child runs: 2 steps each; grandchild runs: 1 step each. */
    static final int STEPS_PER_HIERARCHY = 2 + 2 * CHILD_MESSAGES * CHILD_SAGAS + CHILD_MESSAGES * CHILD_SAGAS;

    record Root(int index) {
    }

    record Child(int root, int index) {
    }

    @Test
    void hierarchies_launched_concurrently_on_three_engines_all_commit_with_each_step_run_once_and_the_barrier_kept(
            DataSource dataSource) throws Exception {
        Topic<Root> rootTopic = Topic.of("cluster-root", Root.class);
        Topic<Child> childTopic = Topic.of("cluster-child", Child.class);
        Topic<Child> grandchildTopic = Topic.of("cluster-grandchild", Child.class);
        StepRecorder recorder = new StepRecorder();
        Saga<Root> root = Saga.on(rootTopic, "cluster-root-handler")
                .step("fan-out", step -> {
                    recorder.record(step);
                    for (int i = 0; i < CHILD_MESSAGES; i++) {
                        step.launch(childTopic, new Child(step.payload().index(), i));
                    }
                })
                .step("fan-in", recorder::record)
                .build();
        List<Saga<?>> sagas = new ArrayList<>(List.of(root));
        for (char c = 'a'; c < 'a' + CHILD_SAGAS; c++) {
            sagas.add(Saga.on(childTopic, "cluster-child-" + c)
                    .step("launch-grandchild", step -> {
                        recorder.record(step);
                        step.launch(grandchildTopic, step.payload());
                    })
                    .step("done", recorder::record)
                    .build());
        }
        sagas.add(Saga.on(grandchildTopic, "cluster-grandchild-handler")
                .step("leaf", recorder::record)
                .build());

        List<CoopEngine> engines = new ArrayList<>();
        ExecutorService clients = Executors.newFixedThreadPool(CLIENT_THREADS);
        try {
            for (int i = 0; i < ENGINES; i++) {
                // the smallest pool an engine accepts: 4 workers + 1 listener + 1 for its client
                HikariDataSource pool = db.newDataSource(WORKERS + 2);
                engines.add(Coop.engine(pool).name("cluster-" + i).workers(WORKERS)
                        .register(sagas.toArray(Saga[]::new)).start());
            }
            List<MessageId> launched = Collections.synchronizedList(new ArrayList<>());
            CountDownLatch start = new CountDownLatch(1);
            AtomicInteger next = new AtomicInteger();
            List<Future<?>> launchers = new ArrayList<>();
            for (int t = 0; t < CLIENT_THREADS; t++) {
                // one launching thread per engine client (which also wakes its engine directly), one plain client
                CoopClient client = t < ENGINES ? engines.get(t).client() : Coop.client(dataSource);
                launchers.add(clients.submit(() -> {
                    start.await();
                    for (int i = next.getAndIncrement(); i < HIERARCHIES; i = next.getAndIncrement()) {
                        launched.add(client.launch(rootTopic, new Root(i)));
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> launcher : launchers) {
                launcher.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            }
            assertThat(launched).hasSize(HIERARCHIES);

            CoopClient observer = Coop.client(dataSource);
            long deadline = System.nanoTime() + WAIT.toNanos();
            for (MessageId id : launched) {
                Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
                assertThat(observer.awaitCompletion(id, left)).as("hierarchy %s", id).isEqualTo(Outcome.COMMITTED);
            }

            CoopTables tables = CoopTables.of(dataSource);
            assertThat(tables.runCount()).isEqualTo(HIERARCHIES * RUNS_PER_HIERARCHY);
            assertThat(tables.runCount(RunStatus.COMMITTED)).isEqualTo(HIERARCHIES * RUNS_PER_HIERARCHY);
            recorder.assertEachStepRanOnce();
            assertThat(recorder.distinct()).isEqualTo(HIERARCHIES * STEPS_PER_HIERARCHY);
            assertThat(recorder.total()).isEqualTo(HIERARCHIES * STEPS_PER_HIERARCHY);

            List<Event> events = tables.allEvents();
            Invariants.assertAll(events);
            Map<String, Long> eventsPerEngine = events.stream().filter(e -> e.engine() != null)
                    .collect(Collectors.groupingBy(Event::engine, Collectors.counting()));
            assertThat(eventsPerEngine.keySet()).as("engines that wrote events (%s)", eventsPerEngine)
                    .containsExactlyInAnyOrderElementsOf(engines.stream().map(CoopEngine::id).toList());
        } finally {
            clients.shutdownNow();
            engines.forEach(CoopEngine::close);
        }
    }

    @Test
    void loops_sleeps_finally_parts_and_results_on_three_engines_run_each_iteration_once(DataSource dataSource)
            throws Exception {
        Topic<Root> rootTopic = Topic.of("cluster-loop-root", Root.class);
        Topic<Child> childTopic = Topic.of("cluster-loop-child", Child.class);
        ContextKey<Integer> rootKey = ContextKey.of("root", Integer.class);
        Map<String, Integer> executions = new ConcurrentHashMap<>();
        Map<Integer, Integer> sums = new ConcurrentHashMap<>();
        int iterations = 3;
        Saga<Root> root = Saga.on(rootTopic, "cluster-loop-root-handler")
                .flowStep("loop", step -> {
                    executions.merge(step.runId() + "/loop/" + step.iteration(), 1, Integer::sum);
                    step.putContext(rootKey, step.payload().index());
                    step.launch(childTopic, new Child(step.payload().index(), step.iteration()));
                    return step.iteration() < iterations ? Flow.repeat() : Flow.next();
                })
                .andFinally(step -> executions.merge(step.runId() + "/finally", 1, Integer::sum))
                .step("sum", step -> { // the finally part in between launches nothing: these are the loop's children
                    int sum = step.childResults().stream().mapToInt(r -> r.get(Integer.class)).sum();
                    sums.put(step.payload().index(), sum);
                    executions.merge(step.runId() + "/sum", 1, Integer::sum);
                })
                .sleep("pause", Duration.ofMillis(20))
                .step("after", step -> executions.merge(step.runId() + "/after", 1, Integer::sum))
                .build();
        Saga<Child> child = Saga.on(childTopic, "cluster-loop-child-handler")
                .step("answer", step -> {
                    executions.merge(step.runId() + "/answer", 1, Integer::sum);
                    if (step.context().get(rootKey).orElseThrow() != step.payload().root()) {
                        throw new IllegalStateException("the child got another hierarchy's context");
                    }
                    step.setResult(step.payload().index() * 10);
                })
                .build();
        int hierarchies = 40;
        List<CoopEngine> engines = new ArrayList<>();
        try {
            for (int i = 0; i < ENGINES; i++) {
                HikariDataSource pool = db.newDataSource(WORKERS + 2);
                engines.add(Coop.engine(pool).name("cluster-loop-" + i).workers(WORKERS).register(root, child)
                        .start());
            }
            List<MessageId> launched = new ArrayList<>();
            for (int i = 0; i < hierarchies; i++) {
                launched.add(engines.get(i % ENGINES).client().launch(rootTopic, new Root(i)));
            }
            CoopClient observer = Coop.client(dataSource);
            for (MessageId id : launched) {
                assertThat(observer.awaitCompletion(id, WAIT)).as("hierarchy %s", id).isEqualTo(Outcome.COMMITTED);
            }
            assertThat(executions.values()).as("every iteration, finally part and step ran once")
                    .allMatch(n -> n == 1);
            // per root: 3 loop iterations, 1 finally part, 1 sum, 1 after; per child: 1 answer
            assertThat(executions).hasSize(hierarchies * (iterations + 3 + iterations));
            // the last iteration's child answers 3 * 10: results are those of the previous step's children only
            assertThat(sums).hasSize(hierarchies).allSatisfy((i, sum) -> assertThat(sum).isEqualTo(iterations * 10));
            Invariants.assertAll(CoopTables.of(dataSource).allEvents());
        } finally {
            engines.forEach(CoopEngine::close);
        }
    }

    @Test
    void a_run_whose_engine_lost_its_connection_mid_step_is_taken_over_by_another_engine(DataSource dataSource)
            throws Exception {
        Topic<Empty> topic = Topic.of("takeover", Empty.class);
        StepGate gate = new StepGate();
        AtomicInteger attempts = new AtomicInteger();
        Map<Integer, Integer> backendOfAttempt = new ConcurrentHashMap<>();
        Map<Integer, String> engineOfAttempt = new ConcurrentHashMap<>();
        Saga<Empty> saga = Saga.on(topic, "takeover-handler")
                .step("write", step -> {
                    int attempt = attempts.incrementAndGet();
                    engineOfAttempt.put(attempt, step.engineId());
                    try (Statement st = step.connection().createStatement();
                            ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                        rs.next();
                        backendOfAttempt.put(attempt, rs.getInt(1));
                    }
                    if (attempt == 1) {
                        gate.pass(); // held until the test lets the crashed attempt go on
                    }
                })
                .step("after", step -> {
                })
                .build();
        CoopClient client = Coop.client(dataSource);
        HikariDataSource firstPool = db.newDataSource(4);
        HikariDataSource secondPool = db.newDataSource(4);
        MessageId id;
        String firstEngine;
        try (CoopEngine first = Coop.engine(firstPool).name("crashing").workers(1).register(saga).start()) {
            firstEngine = first.id();
            id = client.launch(topic, new Empty());
            gate.awaitArrivals(1, WAIT);
            // the step holds its run's row lock in its transaction; killing its connection releases it
            assertThat(terminate(dataSource, backendOfAttempt.get(1))).isTrue();

            try (CoopEngine second = Coop.engine(secondPool).name("taking-over").workers(1)
                    .pollInterval(Duration.ofMillis(50)).register(saga).start()) {
                // the first attempt is still held in its step, yet the run completes on the second engine
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(gate.arrivals()).isEqualTo(1);
                assertThat(engineOfAttempt.get(2)).isEqualTo(second.id());

                gate.open(); // the first attempt now tries to commit on its dead connection
                first.close(); // and its engine is done with it once close() returns
                List<Event> events = client.events(id);
                assertThat(events).filteredOn(e -> e.type() == EventType.SUSPENDED)
                        .extracting(Event::step, Event::engine).containsExactly(
                                org.assertj.core.groups.Tuple.tuple("write", second.id()),
                                org.assertj.core.groups.Tuple.tuple("after", second.id()));
                assertThat(events).extracting(Event::type).doesNotContain(EventType.ROLLING_BACK);
                assertThat(events).extracting(Event::engine).doesNotContain(firstEngine);
                assertThat(attempts).hasValue(2);
                Invariants.assertAll(events);
            }
        } finally {
            gate.open();
        }
    }

    @Test
    void engines_starting_at_once_on_a_fresh_schema_migrate_it_once_and_cooperate(DataSource dataSource)
            throws Exception {
        String schema = "cluster_fresh";
        Topic<Empty> rootTopic = Topic.of("fresh-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("fresh-child", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "fresh-root-handler")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "fresh-child-handler").step("handle", step -> {
        }).build();
        ExecutorService starters = Executors.newFixedThreadPool(ENGINES);
        List<CoopEngine> engines = Collections.synchronizedList(new ArrayList<>());
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<CoopEngine>> starting = new ArrayList<>();
            for (int i = 0; i < ENGINES; i++) {
                HikariDataSource pool = db.newDataSource(5);
                String name = "fresh-" + i;
                starting.add(starters.submit(() -> {
                    start.await();
                    CoopEngine engine = Coop.engine(pool).schema(schema).name(name).workers(2).register(root, child)
                            .start();
                    engines.add(engine);
                    return engine;
                }));
            }
            start.countDown();
            for (Future<CoopEngine> f : starting) {
                f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            }
            try (Connection c = dataSource.getConnection();
                    PreparedStatement ps = c.prepareStatement(
                            "SELECT count(*), count(DISTINCT version) FROM cluster_fresh.schema_version");
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getInt(1)).isPositive().isEqualTo(rs.getInt(2));
            }
            CoopClient client = CoopClient.builder(dataSource).schema(schema).build();
            for (int i = 0; i < 5; i++) {
                MessageId id = client.launch(rootTopic, new Empty());
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            List<Event> events = CoopTables.of(dataSource, schema).allEvents();
            assertThat(events).filteredOn(e -> e.type() == EventType.COMMITTED).hasSize(10);
            Invariants.assertAll(events);
        } finally {
            starters.shutdownNow();
            engines.forEach(CoopEngine::close);
        }
    }

    private static boolean terminate(DataSource dataSource, int pid) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
            ps.setInt(1, pid);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }
}
