package dev.coop;

import dev.coop.failure.CoopStoreException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Whatever user code throws (Errors, exceptions with absurd cause chains, wrapped SQL errors) and whatever a strategy
 * throws, a step commits whole or not at all, and the engine's threads live on. Engines here have one worker: if it
 * died, the last message of each test would never run.
 */
class HostileStepTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    /** An exception that does not fill its stack trace: cheap to nest 200,000 deep. */
    static final class Deep extends RuntimeException {
        Deep(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /** Its message cannot be read. */
    static final class Unreadable extends RuntimeException {
        @Override
        public String getMessage() {
            throw new IllegalStateException("no message for you");
        }
    }

    /** The engine's only worker still takes new work. */
    private static void assertWorkerAlive(CoopEngine engine, String name) {
        MessageId id = engine.client().launch(Topic.of(name + "-probe", Empty.class), new Empty());
        assertThat(engine.client().awaitCompletion(id, WAIT)).as("a later message still runs")
                .isEqualTo(Outcome.COMMITTED);
    }

    private static Saga<Empty> probe(String name) {
        return Saga.on(Topic.of(name + "-probe", Empty.class), name + "-probe").step("one", step -> {
        }).build();
    }

    @Test
    void a_strategy_error_after_a_launch_commits_nothing_parks_the_run_and_the_worker_lives_on() {
        Topic<Empty> parentTopic = Topic.of("strategy-error", Empty.class);
        Topic<Empty> childTopic = Topic.of("strategy-error-child", Empty.class);
        AtomicInteger parentSteps = new AtomicInteger();
        AtomicInteger childSteps = new AtomicInteger();
        CooperationStrategy broken = new CooperationStrategy() {
            @Override
            public BarrierDecision resumeHappyPath(Barrier barrier) {
                throw new AssertionError("strategy bug");
            }
        };
        Saga<Empty> parent = Saga.on(parentTopic, "strategy-error").strategy(broken).step("launch", step -> {
            parentSteps.incrementAndGet();
            step.launch(childTopic, new Empty());
        }).step("after", step -> {
        }).build();
        Saga<Empty> child = Saga.on(childTopic, "strategy-error-child").step("one", step -> {
            childSteps.incrementAndGet();
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parent, child, probe("strategy-error"))
                .workers(1).start()) {
            CoopClient client = engine.client();
            MessageId first = client.launch(parentTopic, new Empty());
            MessageId second = client.launch(parentTopic, new Empty());
            Await.until("both parents parked", WAIT, () -> client.statuses(first).equals(
                    java.util.List.of(RunStatus.PARKED))
                    && client.statuses(second).equals(
                            java.util.List.of(RunStatus.PARKED)));
            assertWorkerAlive(engine, "strategy-error");
            assertThat(parentSteps).as("each parent's step ran once").hasValue(2);
            assertThat(childSteps).as("the launches of the uncommitted steps never committed").hasValue(0);
            assertThat(client.runs(RunQuery.newest().saga("strategy-error-child"))).isEmpty();
            assertThat(client.parkedRuns(50)).anySatisfy(p -> assertThat(p.failure().render()).contains(
                    "strategy bug"));
        }
    }

    @Test
    void errors_thrown_by_steps_fail_the_step_and_are_never_retried_as_database_trouble() {
        Topic<String> topic = Topic.of("step-errors", String.class);
        AtomicInteger attempts = new AtomicInteger();
        Saga<String> saga = Saga.on(topic, "step-errors").step("throw", step -> {
            attempts.incrementAndGet();
            switch (step.payload()) {
                case "soe" -> throw new StackOverflowError("deep recursion in user code");
                case "oom" -> throw new OutOfMemoryError("user code ran out of memory");
                case "assert" -> throw new AssertionError("user assertion");
                case "wrapped-unique" -> throw new CoopStoreException("could not insert",
                        new SQLException("duplicate key value violates unique constraint", "23505"));
                default -> throw new IllegalArgumentException(step.payload());
            }
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(saga, probe("step-errors")).workers(1)
                .start()) {
            for (String kind : java.util.List.of("soe", "oom", "assert", "wrapped-unique")) {
                attempts.set(0);
                MessageId id = engine.client().launch(topic, kind);
                assertThat(engine.client().awaitCompletion(id, WAIT)).as(kind).isEqualTo(Outcome.ROLLED_BACK);
                assertThat(attempts).as(kind + ": one attempt, no retry loop").hasValue(1);
            }
            assertWorkerAlive(engine, "step-errors");
        }
    }

    @Test
    void pathological_exceptions_become_storable_failures_and_parents_hear_of_them() {
        Topic<String> parentTopic = Topic.of("pathological-parent", String.class);
        Topic<String> childTopic = Topic.of("pathological", String.class);
        Saga<String> parent = Saga.on(parentTopic, "pathological-parent").step("launch", step -> {
            step.launch(childTopic, step.payload());
        }).build();
        Saga<String> child = Saga.on(childTopic, "pathological").step("throw", step -> {
            switch (step.payload()) {
                case "deep-200000", "deep-600" -> {
                    int depth = Integer.parseInt(step.payload().substring(5));
                    Throwable t = new Deep("root cause", null);
                    for (int i = 1; i < depth; i++) {
                        t = new Deep("level " + i, t);
                    }
                    throw (Deep) t;
                }
                case "cycle" -> {
                    RuntimeException a = new RuntimeException("A");
                    RuntimeException b = new RuntimeException("B", a);
                    a.initCause(b);
                    throw a;
                }
                case "huge-message" -> throw new IllegalStateException("x".repeat(5_000_000));
                default -> throw new Unreadable();
            }
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parent, child, probe("pathological"))
                .workers(1).start()) {
            CoopClient client = engine.client();
            for (String kind : java.util.List.of("deep-200000", "deep-600", "cycle", "huge-message", "unreadable")) {
                MessageId id = client.launch(parentTopic, kind);
                assertThat(client.awaitCompletion(id, WAIT)).as(kind).isEqualTo(Outcome.ROLLED_BACK);
                String trace = dev.coop.render.Renderers.text().render(client.tree(id));
                switch (kind) {
                    case "deep-200000" -> assertThat(trace).contains("level 199999", "causes omitted", "root cause");
                    case "deep-600" -> assertThat(trace).contains("level 599", "causes omitted", "root cause");
                    case "cycle" -> assertThat(trace).contains("RuntimeException: A", "B");
                    case "huge-message" -> assertThat(trace).contains("more characters cut");
                    default -> assertThat(trace).contains("getMessage() of");
                }
            }
            assertWorkerAlive(engine, "pathological");
        }
    }
    @Test
    void a_step_that_ends_its_transaction_fails_and_never_commits_twice() {
        Topic<String> topic = Topic.of("ends-transaction", String.class);
        Topic<Empty> childTopic = Topic.of("ends-transaction-child", Empty.class);
        AtomicInteger childSteps = new AtomicInteger();
        Saga<String> saga = Saga.on(topic, "ends-transaction").step("sneaky", step -> {
            step.launch(childTopic, new Empty());
            switch (step.payload()) {
                case "unwrap" -> step.connection().unwrap(java.sql.Connection.class).commit();
                default -> {
                    try (var st = step.connection().createStatement()) {
                        st.execute(step.payload());
                    }
                }
            }
        }).compensateWith((step, cause) -> {
        }).step("after", step -> {
        }).build();
        Saga<Empty> child = Saga.on(childTopic, "ends-transaction-child").step("one", step -> {
            childSteps.incrementAndGet();
        }).build();
        try (CoopEngine a = Coop.engine(db.dataSource()).register(saga, child, probe("ends-transaction")).workers(2)
                .start();
                CoopEngine b = Coop.engine(db.dataSource()).register(saga, child).workers(2).start()) {
            CoopClient client = a.client();
            for (String sql : java.util.List.of("COMMIT", "ROLLBACK", "END", "unwrap")) {
                MessageId id = client.launch(topic, sql);
                assertThat(client.awaitCompletion(id, WAIT)).as(sql).isEqualTo(Outcome.ROLLED_BACK);
                java.util.List<Event> events = client.events(id);
                assertThat(events.stream().filter(e -> "sneaky".equals(e.step()) && (e.type() == EventType.SUSPENDED
                        || e.type() == EventType.COMMITTED))).as(sql + ": the step never completed").isEmpty();
                String trace = dev.coop.render.Renderers.text().render(client.tree(id));
                assertThat(trace).as(sql).containsAnyOf("ended the transaction that claimed its run",
                        "must not end its transaction",
                        "must not call Connection.commit()");
                dev.coop.test.Invariants.assertRunsWellFormed(events); // one SEEN, also when COMMIT made it durable
            }
            assertWorkerAlive(a, "ends-transaction");
        }
    }

    @Test
    void database_trouble_is_retried_a_bounded_number_of_times_then_the_run_parks_with_the_cause() throws Exception {
        Topic<Empty> topic = Topic.of("endless-trouble", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "endless-trouble").step("serialize", step -> {
            throw new SQLException("could not serialize access", "40001");
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(saga, probe("endless-trouble")).workers(1)
                .start()) {
            CoopClient client = engine.client();
            // due in an hour, so that its retry count can be set to the last one allowed before it runs
            MessageId id = client.launch(topic, new Empty(), client.now().plusSeconds(3_600));
            try (java.sql.Connection c = db.dataSource().getConnection();
                    java.sql.PreparedStatement ps = c.prepareStatement(
                            "UPDATE coop.run SET retries = 999, runnable_at = clock_timestamp() WHERE message_id = ?")) {
                ps.setObject(1, id.value());
                assertThat(ps.executeUpdate()).isEqualTo(1);
            }
            engine.client().launch(Topic.of("endless-trouble-probe", Empty.class), new Empty()); // wakes the engine
            Await.until("the run parked", WAIT, () -> client.statuses(id).equals(java.util.List.of(RunStatus.PARKED)));
            assertThat(client.parkedRuns(10)).anySatisfy(p -> assertThat(p.failure().render())
                    .contains("Database trouble on 1000 attempts in a row", "could not serialize access"));
            assertWorkerAlive(engine, "endless-trouble");
        }
    }
}
