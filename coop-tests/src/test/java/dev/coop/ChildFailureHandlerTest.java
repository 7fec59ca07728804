package dev.coop;

import dev.coop.failure.ChildRolledBackException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.Failure;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A step's child-failure handler is a catch block around the runs the step caused: it sees every child failure of that
 * step, may swallow them (the run really commits), retry by launching again (awaited, and compensated by a later
 * rollback), or rethrow (the run rolls back).
 */
class ChildFailureHandlerTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Try(int attempt) {
    }

    record Child(String name, boolean fail) {
    }

    @Test
    void a_handler_that_returns_go_to_skips_the_steps_in_between_and_the_run_commits(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("flow-goto-root", Empty.class);
        Topic<Child> childTopic = Topic.of("flow-goto-child", Child.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "flow-goto-root-saga")
                .step("r0", step -> step.launch(childTopic, new Child("a", true)))
                .onChildFailure((step, failure, handling, pending) -> {
                    ran.add("handler " + handling + " pending " + pending);
                    return Flow.goTo("r2");
                })
                .step("r1", step -> ran.add("r1 (must not run)"))
                .step("r2", step -> ran.add("r2"))
                .build();
        Saga<Child> child = Saga.on(childTopic, "flow-goto-child-saga")
                .step("c0", step -> {
                    throw new IllegalStateException("child fails");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            String log = EventLog.table(engine.client().events(id));
            assertThat(ran).as(log).containsExactly("handler 1 pending Continue[]", "r2");
            Event handler = engine.client().events(id).stream()
                    .filter(e -> "r0 (child failure handler)".equals(e.step())).findFirst().orElseThrow();
            assertThat(handler.type()).isEqualTo(EventType.SUSPENDED);
            assertThat(handler.sagaStep()).as("the step's own name, read back from the logged name").isEqualTo("r0");
        }
    }

    /**
     * The last step's handler goes back to an earlier step: the run is no longer at its last step, so the children of
     * that earlier step do not commit it when they finish (the last step runs again first).
     */
    @Test
    void a_last_steps_handler_that_goes_back_runs_the_later_steps_again_before_the_run_commits(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("goto-back-root", Empty.class);
        Topic<Child> childTopic = Topic.of("goto-back-child", Child.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        AtomicInteger lastRuns = new AtomicInteger();
        Saga<Empty> root = Saga.on(rootTopic, "goto-back-root-saga")
                .step("r0", step -> ran.add("r0"))
                .step("r1", step -> {
                    ran.add("r1");
                    step.launch(childTopic, new Child("r1's", false));
                })
                .step("r2", step -> {
                    int n = lastRuns.incrementAndGet();
                    ran.add("r2 #" + n);
                    step.launch(childTopic, new Child("r2's", n == 1)); // fails the first time only
                })
                .onChildFailure((step, failure, handling, pending) -> {
                    ran.add("handler");
                    return Flow.goTo("r1");
                })
                .build();
        Saga<Child> child = Saga.on(childTopic, "goto-back-child-saga")
                .step("c0", step -> {
                    if (step.payload().fail()) {
                        throw new IllegalStateException("child fails");
                    }
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            String log = EventLog.table(engine.client().events(id));
            assertThat(ran).as(log).containsExactly("r0", "r1", "r2 #1", "handler", "r1", "r2 #2");
            dev.coop.test.Invariants.assertAll(engine.client().events(id));
        }
    }

    @Test
    void a_handler_sees_its_handling_count_and_the_step_decision_and_may_override_it(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("flow-override-root", Empty.class);
        Topic<Try> childTopic = Topic.of("flow-override-child", Try.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "flow-override-root-saga")
                .flowStep("r0", step -> {
                    ran.add("r0 iteration " + step.iteration());
                    step.launch(childTopic, new Try(1));
                    return Flow.repeat(); // would loop forever, unless the handler says otherwise
                })
                .onChildFailure((step, failure, handling, pending) -> {
                    ran.add("handler " + handling + " of iteration " + step.iteration() + ", pending " + pending);
                    if (handling == 1) {
                        step.launch(childTopic, new Try(2)); // a retry that fails too: the handler runs again
                        return pending;
                    }
                    return Flow.next();
                })
                .step("r1", step -> ran.add("r1"))
                .build();
        Saga<Try> child = Saga.on(childTopic, "flow-override-child-saga")
                .step("c0", step -> {
                    throw new IllegalStateException("attempt " + step.payload().attempt() + " fails");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            String log = EventLog.table(engine.client().events(id));
            assertThat(ran).as(log).containsExactly("r0 iteration 1",
                    "handler 1 of iteration 1, pending Repeat[]",
                    "handler 2 of iteration 1, pending Repeat[]",
                    "r1");
            dev.coop.test.Invariants.assertAll(engine.client().events(id));
        }
    }

    @Test
    void a_handler_that_returns_normally_swallows_every_child_failure_and_the_parent_commits(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("swallow-root", Empty.class);
        Topic<Child> childTopic = Topic.of("swallow-child", Child.class);
        List<CooperationException> seen = new CopyOnWriteArrayList<>();
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "swallow-root-saga")
                .step("r0", step -> {
                    step.launch(childTopic, new Child("a", true));
                    step.launch(childTopic, new Child("b", true));
                    step.launch(childTopic, new Child("c", false));
                })
                .compensateWith((step, cause) -> ran.add("compensated r0"))
                .onChildFailure((step, failure) -> {
                    seen.add(failure);
                    assertThat(step.step()).isEqualTo("r0");
                })
                .step("r1", step -> ran.add("r1"))
                .build();
        Saga<Child> child = Saga.on(childTopic, "swallow-child-saga")
                .step("c0", step -> {
                    if (step.payload().fail()) {
                        throw new IllegalStateException("child " + step.payload().name() + " fails");
                    }
                })
                .build();

        List<Event> events;
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(engine.client().statuses(id)).containsExactly(RunStatus.COMMITTED);
            events = engine.client().events(id);
        }
        String log = EventLog.table(events);

        assertThat(ran).as(log).containsExactly("r1");
        assertThat(seen).as(log).hasSize(1);
        CooperationException failure = seen.getFirst();
        assertThat(failure).isInstanceOf(ChildRolledBackException.class);
        // both failures, none thrown away
        assertThat(failure.failure().causes()).extracting(Failure::message)
                .containsExactlyInAnyOrder("child a fails", "child b fails");
        assertThat(failure.getCause()).isInstanceOf(CooperationException.class);
        assertThat(failure.getSuppressed()).hasSize(1);
        List<String> rootRows = EventLog
                .rows(events.stream().filter(e -> "swallow-root-saga".equals(e.saga())).toList());
        assertThat(rootRows).as(log).containsExactly(
                "SEEN swallow-root-saga -",
                "EMITTED swallow-root-saga r0",
                "EMITTED swallow-root-saga r0",
                "EMITTED swallow-root-saga r0",
                "SUSPENDED swallow-root-saga r0",
                "SUSPENDED swallow-root-saga r0 (child failure handler)",
                "SUSPENDED swallow-root-saga r1",
                "COMMITTED swallow-root-saga r1");
    }

    @Test
    void a_handler_of_the_last_step_that_swallows_commits_the_run(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("swallow-last-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("swallow-last-child", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "swallow-last-root-saga")
                .step("only", step -> step.launch(childTopic, new Empty()))
                .onChildFailure((step, failure) -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "swallow-last-child-saga")
                .step("c0", step -> {
                    throw new IllegalStateException("no");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = engine.client().events(id);
            assertThat(EventLog.rows(events)).as(EventLog.table(events)).endsWith(
                    "SUSPENDED swallow-last-root-saga only (child failure handler)",
                    "COMMITTED swallow-last-root-saga only");
        }
    }

    @Test
    void a_handler_that_launches_the_child_again_commits_when_the_retry_succeeds(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("retrychild-root", Empty.class);
        Topic<Try> childTopic = Topic.of("retrychild-child", Try.class);
        AtomicInteger handlerCalls = new AtomicInteger();
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "retrychild-root-saga")
                .step("r0", step -> step.launch(childTopic, new Try(1)))
                .onChildFailure((step, failure) -> {
                    int n = handlerCalls.incrementAndGet();
                    step.launch(childTopic, new Try(n + 1));
                })
                .step("r1", step -> ran.add("r1"))
                .build();
        Saga<Try> child = Saga.on(childTopic, "retrychild-child-saga")
                .step("c0", step -> {
                    ran.add("child attempt " + step.payload().attempt());
                    if (step.payload().attempt() < 3) {
                        throw new IllegalStateException("attempt " + step.payload().attempt() + " fails");
                    }
                })
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = engine.client().events(id);
            String log = EventLog.table(events);
            assertThat(handlerCalls.get()).as(log).isEqualTo(2);
            // r1 ran only after the successful retry finished
            assertThat(ran).as(log).containsExactly("child attempt 1", "child attempt 2", "child attempt 3", "r1");
            List<String> rootRows = EventLog.rows(
                    events.stream().filter(e -> "retrychild-root-saga".equals(e.saga())).toList());
            assertThat(rootRows).as(log).containsExactly(
                    "SEEN retrychild-root-saga -",
                    "EMITTED retrychild-root-saga r0",
                    "SUSPENDED retrychild-root-saga r0",
                    "EMITTED retrychild-root-saga r0 (child failure handler)",
                    "SUSPENDED retrychild-root-saga r0 (child failure handler)",
                    "EMITTED retrychild-root-saga r0 (child failure handler)",
                    "SUSPENDED retrychild-root-saga r0 (child failure handler)",
                    "SUSPENDED retrychild-root-saga r1",
                    "COMMITTED retrychild-root-saga r1");
        }
    }

    @Test
    void a_later_rollback_compensates_the_child_a_handler_launched_as_a_retry(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("retryundo-root", Empty.class);
        Topic<Try> childTopic = Topic.of("retryundo-child", Try.class);
        List<String> compensations = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "retryundo-root-saga")
                .step("r0", step -> step.launch(childTopic, new Try(1)))
                .compensateWith((step, cause) -> compensations.add("root:r0"))
                .onChildFailure((step, failure) -> step.launch(childTopic, new Try(2)))
                .step("r1", step -> {
                    throw new IllegalStateException("r1 fails after the retry succeeded");
                })
                .build();
        Saga<Try> child = Saga.on(childTopic, "retryundo-child-saga")
                .step("c0", step -> {
                })
                .compensateWith((step, cause) -> compensations.add("child-" + step.payload().attempt() + ":c0"))
                .step("c1", step -> {
                    if (step.payload().attempt() == 1) {
                        throw new IllegalStateException("first attempt fails");
                    }
                })
                .compensateWith((step, cause) -> compensations.add("child-" + step.payload().attempt() + ":c1"))
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = engine.client().events(id);
            String log = EventLog.table(events);
            // attempt 1 compensated its c0 when it failed; the retry (committed) is compensated whole, then r0
            assertThat(compensations).as(log).containsExactly("child-1:c0", "child-2:c1", "child-2:c0", "root:r0");
            List<String> rootRows = EventLog.rows(
                    events.stream().filter(e -> "retryundo-root-saga".equals(e.saga())).toList());
            assertThat(rootRows).as(log).containsSubsequence(
                    "ROLLING_BACK retryundo-root-saga r1",
                    "ROLLBACK_EMITTED retryundo-root-saga Rollback of r0 (child failure handler) (rolling back child scopes)",
                    "SUSPENDED retryundo-root-saga Rollback of r0 (child failure handler) (rolling back child scopes)",
                    "ROLLBACK_EMITTED retryundo-root-saga Rollback of r0 (rolling back child scopes)",
                    "SUSPENDED retryundo-root-saga Rollback of r0 (rolling back child scopes)",
                    "SUSPENDED retryundo-root-saga Rollback of r0",
                    "ROLLED_BACK retryundo-root-saga Rollback of r0");
        }
    }

    @Test
    void a_handler_that_rethrows_rolls_the_parent_back_with_the_child_failure(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("rethrow-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("rethrow-child", Empty.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "rethrow-root-saga")
                .step("r0", step -> {
                })
                .compensateWith((step, cause) -> ran.add("compensated r0 because " + cause.getClass().getSimpleName()))
                .step("r1", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> ran.add("compensated r1"))
                .onChildFailure((step, failure) -> {
                    ran.add("handler");
                    throw failure;
                })
                .step("r2", step -> ran.add("r2"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "rethrow-child-saga")
                .step("c0", step -> {
                    throw new IllegalStateException("child fails");
                })
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = engine.client().events(id);
            String log = EventLog.table(events);
            assertThat(ran).as(log).containsExactly("handler", "compensated r1",
                    "compensated r0 because ChildRolledBackException");
            Event rollingBack = CompensationTest.find(events, e -> e.type() == EventType.ROLLING_BACK
                    && "rethrow-root-saga".equals(e.saga()));
            assertThat(rollingBack.step()).isEqualTo("r1");
            Failure f = Failure.fromJson(rollingBack.exception());
            assertThat(f.type()).isEqualTo(ChildRolledBackException.TYPE);
            assertThat(f.causes()).extracting(Failure::message).containsExactly("child fails");
            assertThat(EventLog.rows(events)).as(log).noneMatch(r -> r.contains("(child failure handler)"));
        }
    }

    @Test
    void a_handler_that_throws_something_else_rolls_back_with_that_failure(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("handlerfails-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("handlerfails-child", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "handlerfails-root-saga")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .onChildFailure((step, failure) -> {
                    step.launch(childTopic, new Empty()); // never escapes: the handler's transaction rolls back
                    throw new UnsupportedOperationException("giving up on " + failure.reason());
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "handlerfails-child-saga")
                .step("c0", step -> {
                    throw new IllegalStateException("child fails");
                })
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = engine.client().events(id);
            String log = EventLog.table(events);
            assertThat(events.stream().filter(e -> e.type() == EventType.EMITTED).count()).as(log).isEqualTo(2);
            Event rollingBack = CompensationTest.find(events, e -> e.type() == EventType.ROLLING_BACK
                    && "handlerfails-root-saga".equals(e.saga()));
            Failure f = Failure.fromJson(rollingBack.exception());
            assertThat(f.type()).isEqualTo("java.lang.UnsupportedOperationException");
            assertThat(f.message()).startsWith("giving up on ");
        }
    }

    @Test
    void only_failures_of_the_latest_step_reach_the_handler_and_a_recovered_run_is_not_asked_again(
            DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("latest-root", Empty.class);
        Topic<Child> childTopic = Topic.of("latest-child", Child.class);
        List<String> handled = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "latest-root-saga")
                .step("r0", step -> step.launch(childTopic, new Child("first", true)))
                .onChildFailure((step, failure) -> handled.add("r0 handler: " + failure.failure().causes().size()))
                .step("r1", step -> step.launch(childTopic, new Child("second", false)))
                .onChildFailure((step, failure) -> handled.add("r1 handler (must not run)"))
                .step("r2", step -> step.launch(childTopic, new Child("third", true)))
                .onChildFailure((step, failure) -> handled.add("r2 handler: "
                        + failure.failure().causes().stream().map(Failure::message).toList()))
                .build();
        Saga<Child> child = Saga.on(childTopic, "latest-child-saga")
                .step("c0", step -> {
                    if (step.payload().fail()) {
                        throw new IllegalStateException(step.payload().name() + " fails");
                    }
                })
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(handled).as(EventLog.table(engine.client().events(id)))
                    .containsExactly("r0 handler: 1", "r2 handler: [third fails]");
        }
    }
}
