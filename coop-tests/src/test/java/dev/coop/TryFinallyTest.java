package dev.coop;

import dev.coop.failure.Failure;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The finally part of a step runs exactly once per run, in each of the four situations. */
class TryFinallyTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    final List<String> trace = new CopyOnWriteArrayList<>();

    @BeforeEach
    void table(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS released (run text, note text)");
            st.execute("TRUNCATE released");
        }
    }

    private StepBody<Empty> release(String note) {
        return step -> {
            trace.add("finally " + note);
            try (java.sql.PreparedStatement ps = step.connection()
                    .prepareStatement("INSERT INTO released VALUES (?, ?)")) {
                ps.setString(1, step.runId().toString());
                ps.setString(2, note);
                ps.executeUpdate();
            }
        };
    }

    @Test
    void after_the_try_part_and_its_children_succeeded(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("finally-ok", Empty.class);
        Topic<Empty> childTopic = Topic.of("finally-ok-child", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "finally-ok-handler")
                .step("acquire", step -> {
                    trace.add("acquire");
                    step.launch(childTopic, new Empty());
                })
                .andFinally(release("ok"))
                .step("after", step -> trace.add("after"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "finally-ok-child-handler")
                .step("use", step -> trace.add("child uses it")).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga, child).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(trace).containsExactly("acquire", "child uses it", "finally ok", "after");
            assertThat(engine.client().events(id)).filteredOn(e -> e.type() == EventType.SUSPENDED)
                    .extracting(Event::step).contains("acquire (finally)");
            assertThat(released(dataSource)).containsExactly("ok");
        }
    }

    @Test
    void when_the_try_part_fails_it_runs_in_the_failing_transaction_and_its_writes_are_kept(DataSource dataSource)
            throws SQLException {
        Topic<Empty> topic = Topic.of("finally-throws", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "finally-throws-handler")
                .step("first", step -> trace.add("first"))
                .compensateWith((step, cause) -> trace.add("undo first"))
                .step("acquire", step -> {
                    trace.add("acquire");
                    try (Statement st = step.connection().createStatement()) {
                        st.executeUpdate("INSERT INTO released VALUES ('x', 'written by the failing try part')");
                    }
                    throw new IllegalStateException("try part failed");
                })
                .andFinally(release("after failure"))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(trace).containsExactly("first", "acquire", "finally after failure", "undo first");
            assertThat(released(dataSource)).containsExactly("after failure"); // the try part's write is gone
        }
    }

    @Test
    void when_the_try_parts_children_fail_it_runs_after_the_compensation(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("finally-children", Empty.class);
        Topic<Empty> childTopic = Topic.of("finally-children-child", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "finally-children-handler")
                .step("acquire", step -> {
                    trace.add("acquire");
                    step.launch(childTopic, new Empty());
                })
                .compensateWith((step, cause) -> trace.add("undo acquire"))
                .andFinally(release("after rollback"))
                .step("never", step -> trace.add("never"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "finally-children-child-handler")
                .step("fail", step -> {
                    throw new IllegalStateException("child failed");
                }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga, child).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(trace).containsExactly("acquire", "undo acquire", "finally after rollback");
            assertThat(released(dataSource)).containsExactly("after rollback");
        }
    }

    @Test
    void when_a_later_step_fails_it_does_not_run_again(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("finally-later", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "finally-later-handler")
                .step("acquire", step -> trace.add("acquire"))
                .compensateWith((step, cause) -> trace.add("undo acquire"))
                .andFinally(release("once"))
                .step("later", step -> {
                    throw new IllegalStateException("later step failed");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(trace).containsExactly("acquire", "finally once", "undo acquire");
            assertThat(released(dataSource)).containsExactly("once");
        }
    }

    @Test
    void during_a_rollback_it_runs_even_when_the_compensation_fails_and_its_own_failure_ends_the_rollback(
            DataSource dataSource) throws SQLException {
        Topic<Empty> compensationFails = Topic.of("finally-comp-fails", Empty.class);
        Topic<Empty> finallyFails = Topic.of("finally-fails", Empty.class);
        Topic<Empty> childTopic = Topic.of("finally-failing-child", Empty.class);
        Saga<Empty> one = Saga.on(compensationFails, "finally-comp-fails-handler")
                .step("acquire", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> {
                    trace.add("compensation that fails");
                    throw new IllegalStateException("compensation failed");
                })
                .andFinally(release("after failed compensation"))
                .build();
        Saga<Empty> two = Saga.on(finallyFails, "finally-fails-handler")
                .step("acquire", step -> step.launch(childTopic, new Empty())) // no compensation
                .andFinally(step -> {
                    trace.add("finally that fails");
                    throw new IllegalStateException("finally failed");
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "finally-failing-child-handler").step("fail", step -> {
            throw new IllegalStateException("child failed");
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(one, two, child).start()) {
            MessageId first = engine.client().launch(compensationFails, new Empty());
            assertThat(engine.client().awaitCompletion(first, WAIT)).isEqualTo(Outcome.ROLLBACK_FAILED);
            assertThat(trace).containsExactly("compensation that fails", "finally after failed compensation");
            assertThat(released(dataSource)).containsExactly("after failed compensation");
            assertThat(failureOf(engine, first).message()).isEqualTo("compensation failed");

            trace.clear();
            MessageId second = engine.client().launch(finallyFails, new Empty());
            assertThat(engine.client().awaitCompletion(second, WAIT)).isEqualTo(Outcome.ROLLBACK_FAILED);
            assertThat(trace).containsExactly("finally that fails");
            assertThat(failureOf(engine, second).message()).isEqualTo("finally failed");
        }
    }

    private static Failure failureOf(CoopEngine engine, MessageId id) {
        return engine.client().events(id).stream().filter(e -> e.type() == EventType.ROLLBACK_FAILED)
                .map(e -> Failure.fromJson(e.exception())).findFirst().orElseThrow();
    }

    @Test
    void compensate_with_after_a_finally_part_applies_to_its_step() {
        Topic<Empty> topic = Topic.of("finally-shape", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "finally-shape-handler")
                .step("a", step -> {
                })
                .andFinally(step -> {
                })
                .compensateWith((step, cause) -> {
                })
                .build();
        assertThat(saga.steps()).extracting(Saga.Step::name).containsExactly("a", "a (finally)");
        assertThat(saga.steps().getFirst().compensation()).isNotNull();
        assertThat(saga.steps().get(1).isFinallyPart()).isTrue();
    }

    /** A saga whose finally part launches a "release" message; its child records when it ran. */
    private Saga<Empty> releasing(String name, Topic<Empty> topic, Topic<Empty> releaseTopic, boolean tryFails,
            Topic<Empty> failingChild) {
        return Saga.on(topic, name)
                .step("acquire", step -> {
                    trace.add("acquire");
                    if (failingChild != null) {
                        step.launch(failingChild, new Empty());
                    }
                    if (tryFails) {
                        throw new IllegalStateException("the try part fails");
                    }
                })
                .compensateWith((step, cause) -> trace.add("compensate acquire"))
                .andFinally(step -> {
                    trace.add("finally launches release");
                    step.launch(releaseTopic, new Empty());
                })
                .step("after", step -> trace.add("after"))
                .build();
    }

    private Saga<Empty> releaseHandler(String name, Topic<Empty> releaseTopic) {
        return Saga.on(releaseTopic, name).step("release", step -> trace.add("release ran"))
                .compensateWith((step, cause) -> trace.add("release compensated"))
                .build();
    }

    @Test
    void a_finally_part_that_launches_on_the_happy_path_is_awaited_before_the_next_step(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("finally-launch-ok", Empty.class);
        Topic<Empty> releaseTopic = Topic.of("finally-launch-ok-release", Empty.class);
        try (CoopEngine engine = Coop.engine(dataSource).register(
                releasing("finally-launch-ok-handler", topic, releaseTopic, false, null),
                releaseHandler("finally-launch-ok-release-handler", releaseTopic)).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = engine.client().events(id);
            String log = dev.coop.test.EventLog.table(events);
            assertThat(trace).as(log).containsExactly("acquire", "finally launches release", "release ran", "after");
            assertThat(events).as(log).anyMatch(e -> e.type() == EventType.EMITTED
                    && "acquire (finally)".equals(e.step()));
            dev.coop.test.Invariants.assertAll(events);
        }
    }

    @Test
    void a_finally_part_that_launches_during_a_rollback_is_awaited_and_not_compensated(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("finally-launch-rb", Empty.class);
        Topic<Empty> releaseTopic = Topic.of("finally-launch-rb-release", Empty.class);
        Topic<Empty> failingTopic = Topic.of("finally-launch-rb-failing", Empty.class);
        Saga<Empty> failing = Saga.on(failingTopic, "finally-launch-rb-failing-handler").step("fail", step -> {
            throw new IllegalStateException("the child fails");
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(
                releasing("finally-launch-rb-handler", topic, releaseTopic, false, failingTopic),
                releaseHandler("finally-launch-rb-release-handler", releaseTopic), failing).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = engine.client().events(id);
            String log = dev.coop.test.EventLog.table(events);
            // the child failed: acquire is compensated, then its finally part runs and its launch is awaited
            assertThat(trace).as(log).containsExactly("acquire", "compensate acquire", "finally launches release",
                    "release ran");
            Event releaseCommitted = events.stream().filter(e -> e.type() == EventType.COMMITTED
                    && "finally-launch-rb-release-handler".equals(e.saga())).findFirst().orElseThrow();
            Event rolledBack = events.stream().filter(e -> e.type() == EventType.ROLLED_BACK
                    && "finally-launch-rb-handler".equals(e.saga())).findFirst().orElseThrow();
            assertThat(rolledBack.id()).as(log).isGreaterThan(releaseCommitted.id());
        }
    }

    @Test
    void a_finally_part_that_launches_when_its_step_fails_is_awaited_before_the_run_ends(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("finally-launch-fail", Empty.class);
        Topic<Empty> releaseTopic = Topic.of("finally-launch-fail-release", Empty.class);
        try (CoopEngine engine = Coop.engine(dataSource).register(
                releasing("finally-launch-fail-handler", topic, releaseTopic, true, null),
                releaseHandler("finally-launch-fail-release-handler", releaseTopic)).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = engine.client().events(id);
            String log = dev.coop.test.EventLog.table(events);
            assertThat(trace).as(log).containsExactly("acquire", "finally launches release", "release ran");
            Event releaseCommitted = events.stream().filter(e -> e.type() == EventType.COMMITTED
                    && "finally-launch-fail-release-handler".equals(e.saga())).findFirst().orElseThrow();
            Event rolledBack = events.stream().filter(e -> e.type() == EventType.ROLLED_BACK
                    && "finally-launch-fail-handler".equals(e.saga())).findFirst().orElseThrow();
            assertThat(rolledBack.id()).as(log).isGreaterThan(releaseCommitted.id());
        }
    }

    private static List<String> released(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT note FROM released ORDER BY note")) {
            List<String> notes = new java.util.ArrayList<>();
            while (rs.next()) {
                notes.add(rs.getString(1));
            }
            return notes;
        }
    }
}
