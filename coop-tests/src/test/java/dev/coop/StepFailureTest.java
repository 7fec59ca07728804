package dev.coop;

import dev.coop.failure.ChildRolledBackException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A step that throws is recorded in the log and its run ends rolled back, never lost or retried silently; a parent of
 * a failed child fails too; nothing a step throws or leaves behind stops the engine. (How compensation proceeds is
 * the failure issue's business; these tests only pin where a failure starts and how the run ends.)
 */
class StepFailureTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final ObjectMapper JSON = new ObjectMapper();

    record Kind(String name) {
    }

    @Test
    void a_step_that_throws_is_recorded_with_its_exception_and_the_run_rolls_back(DataSource dataSource)
            throws IOException {
        Topic<Empty> topic = Topic.of("throwing-step", Empty.class);
        AtomicBoolean laterStepRan = new AtomicBoolean();
        Saga<Empty> saga = Saga.on(topic, "throwing-step-handler")
                .step("reserve", step -> {
                })
                .step("charge", step -> {
                    throw new IllegalArgumentException("card declined: 4242");
                })
                .step("ship", step -> laterStepRan.set(true))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(engine.client().statuses(id)).containsExactly(RunStatus.ROLLED_BACK);
            assertThat(laterStepRan).isFalse();

            List<Event> events = engine.client().events(id);
            assertThat(EventLog.rows(events.subList(0, 4))).containsExactly(
                    "EMITTED - -",
                    "SEEN throwing-step-handler -",
                    "SUSPENDED throwing-step-handler reserve",
                    "ROLLING_BACK throwing-step-handler charge");
            JsonNode failure = JSON.readTree(events.get(3).exception());
            assertThat(failure.get("message").asText()).isEqualTo("card declined: 4242");
            assertThat(failure.get("type").asText()).isEqualTo("java.lang.IllegalArgumentException");
            assertThat(failure.get("stackTrace").isArray()).isTrue();
            assertThat(events.getLast().type()).isEqualTo(EventType.ROLLED_BACK);
            assertThat(events).filteredOn(e -> e.type() == EventType.ROLLING_BACK).hasSize(1);
            assertThat(events).extracting(Event::step).doesNotContain("ship");
            Invariants.assertAll(events);
        }
    }

    @Test
    void a_step_that_throws_a_checked_exception_in_its_first_step_is_recorded_too(DataSource dataSource)
            throws IOException {
        Topic<Empty> topic = Topic.of("throwing-first-step", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "throwing-first-step-handler")
                .step("read-file", step -> {
                    throw new IOException("no such file: /nowhere");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = engine.client().events(id);
            assertThat(EventLog.rows(events.subList(0, 3))).containsExactly(
                    "EMITTED - -",
                    "SEEN throwing-first-step-handler -",
                    "ROLLING_BACK throwing-first-step-handler read-file");
            JsonNode failure = JSON.readTree(events.get(2).exception());
            assertThat(failure.get("message").asText()).isEqualTo("no such file: /nowhere");
            assertThat(failure.get("type").asText()).isEqualTo("java.io.IOException");
            assertThat(events.getLast().type()).isEqualTo(EventType.ROLLED_BACK);
            Invariants.assertAll(events);
        }
    }

    @Test
    void a_parent_whose_child_threw_rolls_back_too_with_the_child_failure_as_cause(DataSource dataSource)
            throws IOException {
        Topic<Empty> rootTopic = Topic.of("failed-child-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("failed-child-child", Empty.class);
        Topic<Empty> grandchildTopic = Topic.of("failed-child-grandchild", Empty.class);
        AtomicBoolean rootContinued = new AtomicBoolean();
        Saga<Empty> root = Saga.on(rootTopic, "failed-child-root-handler")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> rootContinued.set(true))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "failed-child-child-handler")
                .step("launch", step -> step.launch(grandchildTopic, new Empty()))
                .build();
        Saga<Empty> grandchild = Saga.on(grandchildTopic, "failed-child-grandchild-handler")
                .step("explode", step -> {
                    throw new IllegalStateException("grandchild exploded");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child, grandchild).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(rootContinued).isFalse();

            List<Event> events = engine.client().events(id);
            Event rootFailure = firstRollingBack(events, "failed-child-root-handler");
            assertThat(rootFailure.step()).isEqualTo("launch");
            JsonNode failure = JSON.readTree(rootFailure.exception());
            assertThat(failure.get("type").asText()).isEqualTo("dev.coop.failure.ChildRolledBackException");
            // the chain of causes leads down to what the grandchild threw
            assertThat(rootFailure.exception()).contains("grandchild exploded")
                    .contains("java.lang.IllegalStateException");
            JsonNode childFailure = failure.get("causes").get(0);
            assertThat(childFailure.get("type").asText()).isEqualTo("dev.coop.failure.ChildRolledBackException");
            assertThat(childFailure.get("causes").get(0).get("message").asText()).isEqualTo("grandchild exploded");

            // each level failed only after the level below had finished
            Event grandchildFailed = lastOf(events, "failed-child-grandchild-handler");
            Event childFailed = lastOf(events, "failed-child-child-handler");
            assertThat(grandchildFailed.type()).isEqualTo(EventType.ROLLED_BACK);
            assertThat(childFailed.type()).isEqualTo(EventType.ROLLED_BACK);
            assertThat(firstRollingBack(events, "failed-child-child-handler").id())
                    .isGreaterThan(grandchildFailed.id());
            assertThat(rootFailure.id()).isGreaterThan(childFailed.id());
            assertThat(events.getLast().type()).isEqualTo(EventType.ROLLED_BACK);
            assertThat(events.getLast().saga()).isEqualTo("failed-child-root-handler");
            Invariants.assertAll(events);
        }
    }

    @Test
    void an_error_thrown_by_a_step_fails_its_run_but_not_the_engine(DataSource dataSource) throws IOException {
        Topic<Kind> topic = Topic.of("throwing-error", Kind.class);
        Saga<Kind> saga = Saga.on(topic, "throwing-error-handler")
                .step("maybe-error", step -> {
                    switch (step.payload().name()) {
                        case "assertion" -> throw new AssertionError("an assertion in business code");
                        case "stack-overflow" -> recurse(0);
                        case "custom-error" -> throw new CustomError();
                        default -> {
                        }
                    }
                })
                .build();
        // one worker: if an Error killed it, nothing would run any more
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(saga).start()) {
            for (String kind : List.of("assertion", "stack-overflow", "custom-error")) {
                MessageId id = engine.client().launch(topic, new Kind(kind));
                assertThat(engine.client().awaitCompletion(id, WAIT)).as(kind).isEqualTo(Outcome.ROLLED_BACK);
                Event failed = firstRollingBack(engine.client().events(id), "throwing-error-handler");
                String type = JSON.readTree(failed.exception()).get("type").asText();
                assertThat(type).as(kind).isIn(AssertionError.class.getName(), StackOverflowError.class.getName(),
                        CustomError.class.getName());

                MessageId next = engine.client().launch(topic, new Kind("fine"));
                assertThat(engine.client().awaitCompletion(next, WAIT)).as("after " + kind)
                        .isEqualTo(Outcome.COMMITTED);
            }
        }
    }

    /**
     * Code that catches InterruptedException often restores the flag ({@code Thread.currentThread().interrupt()}) and
     * returns. A step doing so must not take its worker thread down with it: the engine must keep running steps.
     */
    @Test
    void a_step_that_leaves_its_thread_interrupted_does_not_stop_the_engine(DataSource dataSource) {
        Topic<Kind> topic = Topic.of("interrupting-step", Kind.class);
        Saga<Kind> saga = Saga.on(topic, "interrupting-step-handler")
                .step("maybe-interrupt", step -> {
                    if (step.payload().name().equals("interrupt")) {
                        Thread.currentThread().interrupt();
                    }
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(saga).start()) {
            MessageId first = engine.client().launch(topic, new Kind("interrupt"));
            Outcome firstOutcome = engine.client().awaitCompletion(first, WAIT);
            assertThat(firstOutcome).isIn(Outcome.COMMITTED, Outcome.ROLLED_BACK);
            // let the worker get back to waiting for work (or die trying) before the next launch wakes it
            String workerName = "coop-" + engine.id() + "-worker-0";
            Await.until("the worker to wait for work again, or to end", WAIT,
                    () -> liveThread(workerName).map(StepFailureTest::waitsForWork).orElse(true));
            assertThat(liveThread(workerName)).as("the engine's only worker thread, alive").isPresent();

            MessageId next = engine.client().launch(topic, new Kind("fine"));
            assertThat(engine.client().awaitCompletion(next, Duration.ofSeconds(5)))
                    .as("a launch after a step that left its worker thread interrupted")
                    .isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void a_serialization_failure_in_a_step_is_retried_and_not_recorded_as_a_failure(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("transient-step", Empty.class);
        java.util.concurrent.atomic.AtomicInteger attempts = new java.util.concurrent.atomic.AtomicInteger();
        Saga<Empty> saga = Saga.on(topic, "transient-step-handler")
                .step("contended", step -> {
                    if (attempts.incrementAndGet() == 1) {
                        throw new java.sql.SQLException("could not serialize access due to concurrent update",
                                "40001");
                    }
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(attempts).hasValue(2);
            List<Event> events = engine.client().events(id);
            assertThat(events).extracting(Event::type).doesNotContain(EventType.ROLLING_BACK, EventType.ROLLED_BACK);
            assertThat(EventLog.rows(events)).containsExactly(
                    "EMITTED - -",
                    "SEEN transient-step-handler -",
                    "SUSPENDED transient-step-handler contended",
                    "COMMITTED transient-step-handler contended");
        }
    }

    private static java.util.Optional<Thread> liveThread(String name) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals(name) && t.isAlive())
                .findFirst();
    }

    /**
     * After a database problem the run is postponed by a backoff (at least 50 ms the first time), so its next attempt
     * must not start sooner. Many runs hit the problem at once here, so that idle workers are around to claim a run in
     * any window in which it is unlocked but not yet postponed.
     */
    @Test
    void a_step_retried_after_a_database_problem_waits_for_its_backoff_first(DataSource dataSource) {
        int runs = 20;
        Topic<Kind> topic = Topic.of("backoff-respected", Kind.class);
        Map<String, List<Long>> attemptTimes = new ConcurrentHashMap<>();
        Saga<Kind> saga = Saga.on(topic, "backoff-respected-handler")
                .step("contended", step -> {
                    List<Long> times = attemptTimes.computeIfAbsent(step.runId().toString(),
                            id -> new CopyOnWriteArrayList<>());
                    times.add(System.nanoTime());
                    if (times.size() == 1) {
                        throw new java.sql.SQLException("could not serialize access due to concurrent update",
                                "40001");
                    }
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(8).register(saga).start()) {
            List<MessageId> ids = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                ids.add(engine.client().launch(topic, new Kind("run-" + i)));
            }
            for (MessageId id : ids) {
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            List<String> tooSoon = new ArrayList<>();
            attemptTimes.forEach((run, times) -> {
                for (int i = 1; i < times.size(); i++) {
                    long gapMillis = (times.get(i) - times.get(i - 1)) / 1_000_000;
                    if (gapMillis < 45) {
                        tooSoon.add("run " + run + ": attempt " + (i + 1) + " started " + gapMillis
                                + " ms after attempt " + i);
                    }
                }
            });
            assertThat(tooSoon).as("attempts that did not wait for the backoff").isEmpty();
        }
    }

    /** Whether an engine's worker thread is parked in the engine's dispatcher, waiting for a task. */
    private static boolean waitsForWork(Thread worker) {
        Thread.State state = worker.getState();
        return (state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING)
                && java.util.Arrays.stream(worker.getStackTrace())
                        .anyMatch(f -> f.getClassName().endsWith(".Dispatcher") && f.getMethodName().equals("next"));
    }

    private static Event firstRollingBack(List<Event> events, String saga) {
        return events.stream().filter(e -> e.type() == EventType.ROLLING_BACK && saga.equals(e.saga())).findFirst()
                .orElseThrow(() -> new AssertionError("no ROLLING_BACK of " + saga + " in\n" + EventLog.table(events)));
    }

    private static Event lastOf(List<Event> events, String saga) {
        return events.stream().filter(e -> saga.equals(e.saga()) && e.type() != EventType.EMITTED)
                .reduce((a, b) -> b).orElseThrow();
    }

    private static int recurse(int depth) {
        return recurse(depth + 1) + 1;
    }

    static final class CustomError extends Error {
        private static final long serialVersionUID = 1L;

        CustomError() {
            super("a custom Error subclass");
        }
    }
}
