package dev.coop;

import dev.coop.failure.CancellationRequestedException;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.Failure;
import dev.coop.failure.GaveUpException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.StepGate;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Cancellation: every run in the cancelled scope gives up at its next step boundary (a running step finishes its code,
 * then its transaction rolls back) and rolls back with compensation. Cancelling something finished changes nothing.
 */
class CancellationTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    /** How long a client request may take while a step of the scope is held. */
    static final Duration PROMPT = Duration.ofSeconds(3);

    @Test
    void cancelling_while_a_child_step_runs_rolls_back_that_step_and_compensates_the_whole_hierarchy(
            DataSource dataSource) throws Exception {
        String table = CompensationTest.createTable(dataSource, "cancel_running_writes");
        Topic<Empty> rootTopic = Topic.of("cancel-running-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("cancel-running-child", Empty.class);
        Topic<Empty> grandchildTopic = Topic.of("cancel-running-grandchild", Empty.class);
        StepGate gate = new StepGate(Duration.ofSeconds(20));
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "cancel-running-root-saga")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> ran.add("compensated root:r0"))
                .step("r1", step -> ran.add("r1 (must not run)"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "cancel-running-child-saga")
                .step("c0", step -> {
                })
                .compensateWith((step, cause) -> ran.add("compensated child:c0"))
                .step("c1", step -> {
                    CompensationTest.insert(step.connection(), table, "written by c1");
                    step.launch(grandchildTopic, new Empty());
                    gate.pass();
                    ran.add("c1 finished its code");
                })
                .compensateWith((step, cause) -> ran.add("compensated child:c1 (must not run)"))
                .build();
        Saga<Empty> grandchild = Saga.on(grandchildTopic, "cancel-running-grandchild-saga")
                .step("g0", step -> ran.add("grandchild (must not run)"))
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).register(root, child, grandchild).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Empty());
            gate.awaitArrivals(1, WAIT);

            CompletableFuture<CancelResult> cancel = CompletableFuture
                    .supplyAsync(() -> client.cancel(id, "the customer changed their mind"));
            boolean returnedWhileStepHeld = returnsWithin(cancel, PROMPT);
            gate.open();
            assertThat(cancel.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(CancelResult.REQUESTED);

            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            String log = EventLog.table(events);
            assertThat(returnedWhileStepHeld)
                    .as("cancel() returned while a step in the scope was running (it must not wait for the step)")
                    .isTrue();
            assertThat(ran).as(log).containsExactly("c1 finished its code", "compensated child:c0",
                    "compensated root:r0");
            assertThat(CompensationTest.rows(dataSource, table)).as("c1's write, rolled back with its step")
                    .isEmpty();
            assertThat(events).as(log).noneMatch(e -> e.type() == EventType.EMITTED
                    && "cancel-running-child-saga".equals(e.saga()));

            Event requested = CompensationTest.find(events, e -> e.type() == EventType.CANCELLATION_REQUESTED);
            Failure request = Failure.fromJson(requested.exception());
            assertThat(request.type()).isEqualTo(CancellationRequestedException.TYPE);
            assertThat(request.message()).isEqualTo("the customer changed their mind");

            Event childGaveUp = CompensationTest.find(events, e -> e.type() == EventType.ROLLING_BACK
                    && "cancel-running-child-saga".equals(e.saga()));
            assertThat(childGaveUp.step()).as(log).isEqualTo("c1");
            assertGaveUpBecauseCancelled(Failure.fromJson(childGaveUp.exception()), "cancel-running-child-saga");
            Event rootGaveUp = CompensationTest.find(events, e -> e.type() == EventType.ROLLING_BACK
                    && "cancel-running-root-saga".equals(e.saga()));
            assertGaveUpBecauseCancelled(Failure.fromJson(rootGaveUp.exception()), "cancel-running-root-saga");
            CooperationException asJava = CooperationException.of(Failure.fromJson(rootGaveUp.exception()));
            assertThat(asJava).isInstanceOf(GaveUpException.class)
                    .cause().isInstanceOf(CancellationRequestedException.class);
        } finally {
            gate.open();
        }
    }

    @Test
    void a_parent_cancelled_while_its_child_cannot_start_rolls_back_at_once_and_the_child_never_runs(
            DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("cancel-unstarted-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("cancel-unstarted-child", Empty.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "cancel-unstarted-root-saga")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> ran.add("compensated root:r0"))
                .step("r1", step -> ran.add("r1 (must not run)"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "cancel-unstarted-child-saga")
                .step("c0", step -> ran.add("c0 of " + step.lineage().depth() + "-element lineage"))
                .compensateWith((step, cause) -> ran.add("compensated c0 (must not run)"))
                .build();
        // engine B registers the child saga, then stops: launches on its topic still create runs nobody executes
        Coop.engine(dataSource).workers(1).register(child).start().close();

        MessageId id;
        try (CoopEngine engineA = Coop.engine(dataSource).workers(2).register(root).start()) {
            CoopClient client = engineA.client();
            id = client.launch(rootTopic, new Empty());
            Await.until("the root to wait for its child", WAIT,
                    () -> client.statuses(id).equals(List.of(RunStatus.WAITING)));
            assertThat(client.cancel(id, "never mind")).isEqualTo(CancelResult.REQUESTED);

            assertThat(client.awaitCompletion(id, WAIT)).as("while engine B is down")
                    .isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            String log = EventLog.table(events);
            assertThat(ran).as(log).containsExactly("compensated root:r0");
            List<Event> childEvents = events.stream()
                    .filter(e -> "cancel-unstarted-child-saga".equals(e.saga())).toList();
            assertThat(childEvents).as(log).extracting(Event::type)
                    .containsExactly(EventType.ROLLING_BACK, EventType.ROLLED_BACK);
            Failure neverStarted = Failure.fromJson(childEvents.getFirst().exception());
            assertThat(neverStarted.type()).isEqualTo(GaveUpException.TYPE);
            assertThat(neverStarted.message()).as(log).startsWith("Never started");
            assertThat(neverStarted.causes()).extracting(Failure::type)
                    .containsExactly(CancellationRequestedException.TYPE);
            Event rootGaveUp = CompensationTest.find(events, e -> e.type() == EventType.ROLLING_BACK
                    && "cancel-unstarted-root-saga".equals(e.saga()));
            assertGaveUpBecauseCancelled(Failure.fromJson(rootGaveUp.exception()), "cancel-unstarted-root-saga");
            dev.coop.test.Invariants.assertAll(events);
        }

        try (CoopEngine engineB = Coop.engine(dataSource).workers(2).register(child).start()) {
            CoopClient client = engineB.client();
            MessageId later = client.launch(childTopic, new Empty());
            assertThat(client.awaitCompletion(later, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ran).as("engine B is back and ran a later message; the settled child never ran")
                    .containsExactly("compensated root:r0", "c0 of 2-element lineage");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        }
    }

    @Test
    void cancelling_a_parent_that_waits_for_a_delayed_child_settles_the_child_before_it_starts(
            DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("cancel-delayed-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("cancel-delayed-child", Empty.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "cancel-delayed-root-saga")
                .step("r0", step -> step.launch(childTopic, new Empty(), step.startedAt().plus(Duration.ofHours(1))))
                .compensateWith((step, cause) -> ran.add("compensated root:r0"))
                .step("r1", step -> ran.add("r1 (must not run)"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "cancel-delayed-child-saga")
                .step("c0", step -> ran.add("c0 (must not run)"))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Empty());
            Await.until("the root to wait for its delayed child", WAIT,
                    () -> client.statuses(id).equals(List.of(RunStatus.WAITING)));
            assertThat(client.cancel(id, "not any more")).isEqualTo(CancelResult.REQUESTED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            assertThat(ran).as(EventLog.table(events)).containsExactly("compensated root:r0");
            // the child is either settled by the parent's give-up before anyone claims it, or claimed by this engine
            // (the cancel makes it due at once) and gives up at its claim: either way no step of it runs
            List<EventType> childEvents = events.stream().filter(e -> "cancel-delayed-child-saga".equals(e.saga()))
                    .map(Event::type).toList();
            assertThat(childEvents).as(EventLog.table(events)).endsWith(EventType.ROLLING_BACK, EventType.ROLLED_BACK)
                    .doesNotContain(EventType.SUSPENDED, EventType.COMMITTED);
        }
    }

    @Test
    void a_step_that_checks_give_up_if_requested_stops_early_and_the_run_rolls_back(DataSource dataSource)
            throws Exception {
        String table = CompensationTest.createTable(dataSource, "cancel_cooperative_writes");
        Topic<Empty> topic = Topic.of("cancel-cooperative", Empty.class);
        StepGate arrived = new StepGate(Duration.ZERO);
        arrived.open();
        AtomicReference<Throwable> stoppedWith = new AtomicReference<>();
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "cancel-cooperative-saga")
                .step("s0", step -> {
                })
                .compensateWith((step, cause) -> ran.add("compensated s0 because " + cause.getClass().getSimpleName()))
                .step("s1", step -> {
                    CompensationTest.insert(step.connection(), table, "written by s1");
                    arrived.pass();
                    try {
                        Await.until("a cancellation seen by giveUpIfRequested()", Duration.ofSeconds(6), () -> {
                            step.giveUpIfRequested();
                            return false;
                        });
                    } catch (Throwable t) {
                        stoppedWith.set(t);
                        throw t;
                    }
                })
                .compensateWith((step, cause) -> ran.add("compensated s1 (must not run)"))
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Empty());
            arrived.awaitArrivals(1, WAIT);
            CompletableFuture<CancelResult> cancel = CompletableFuture.supplyAsync(() -> client.cancel(id, "stop"));
            boolean returnedWhileStepRan = returnsWithin(cancel, PROMPT);
            assertThat(cancel.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(CancelResult.REQUESTED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            String log = EventLog.table(client.events(id));

            assertThat(returnedWhileStepRan).as("cancel() returned while the step was running").isTrue();
            assertThat(stoppedWith.get()).as(log).isInstanceOf(GaveUpException.class)
                    .cause().isInstanceOf(CancellationRequestedException.class);
            assertThat(ran).as(log).containsExactly("compensated s0 because GaveUpException");
            assertThat(CompensationTest.rows(dataSource, table)).isEmpty();
            Event gaveUp = CompensationTest.find(client.events(id), e -> e.type() == EventType.ROLLING_BACK);
            assertThat(gaveUp.step()).isEqualTo("s1");
            assertGaveUpBecauseCancelled(Failure.fromJson(gaveUp.exception()), "cancel-cooperative-saga");
        }
    }

    @Test
    void give_up_if_requested_does_nothing_when_nobody_cancelled(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("cancel-not-requested", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "cancel-not-requested-saga")
                .step("s0", StepContext::giveUpIfRequested)
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void cancelling_a_finished_hierarchy_changes_nothing_and_says_so(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("cancel-finished-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("cancel-finished-child", Empty.class);
        AtomicReference<Lineage> childLineage = new AtomicReference<>();
        Saga<Empty> root = Saga.on(rootTopic, "cancel-finished-root-saga")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "cancel-finished-child-saga")
                .step("c0", step -> childLineage.set(step.lineage()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> before = client.events(id);

            assertThat(client.cancel(id, "too late")).isEqualTo(CancelResult.ALREADY_FINISHED);
            assertThat(client.cancel(childLineage.get(), "too late")).isEqualTo(CancelResult.ALREADY_FINISHED);

            assertThat(client.events(id)).isEqualTo(before);
            assertThat(client.statuses(id)).containsExactly(RunStatus.COMMITTED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void cancelling_twice_records_one_request_and_says_the_second_was_already_requested(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("cancel-twice", Empty.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "cancel-twice-saga")
                .step("s0", step -> ran.add("s0 (must not run)"))
                .build();
        Coop.engine(dataSource).workers(1).register(saga).start().close();
        CoopClient client = Coop.client(dataSource);
        MessageId id = client.launch(topic, new Empty());

        assertThat(client.cancel(id, "first")).isEqualTo(CancelResult.REQUESTED);
        assertThat(client.cancel(id, "second")).isEqualTo(CancelResult.ALREADY_REQUESTED);
        List<Event> requests = client.events(id).stream()
                .filter(e -> e.type() == EventType.CANCELLATION_REQUESTED).toList();
        assertThat(requests).hasSize(1);
        assertThat(Failure.fromJson(requests.getFirst().exception()).message()).isEqualTo("first");

        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(saga).start()) {
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        }
        assertThat(ran).isEmpty();
        assertThat(client.cancel(id, "third")).isEqualTo(CancelResult.ALREADY_FINISHED);
    }

    @Test
    void a_cancellation_needs_a_reason_and_an_existing_scope(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        Topic<Empty> topic = Topic.of("cancel-validation", Empty.class);
        MessageId id = client.launch(topic, new Empty());
        assertThatThrownBy(() -> client.cancel(id, " ")).isInstanceOf(CoopValidationException.class);
        assertThatThrownBy(() -> client.cancel(new MessageId(UUID.randomUUID()), "why"))
                .isInstanceOf(CoopValidationException.class);
        assertThatThrownBy(() -> client.cancel(new Lineage(List.of(UUID.randomUUID(), UUID.randomUUID())), "why"))
                .isInstanceOf(CoopValidationException.class);
    }

    @Test
    void cancelling_a_run_that_waits_for_a_retry_rolls_it_back_at_once(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("cancel-backoff", Empty.class);
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "cancel-backoff-saga")
                .step("s0", step -> {
                })
                .compensateWith((step, cause) -> ran.add("compensated s0"))
                .step("flaky", step -> {
                    attempts.add(step.attempt());
                    throw new java.io.IOException("down");
                })
                .retry(RetryPolicy.attempts(3).initialDelay(Duration.ofMinutes(10)))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Empty());
            Await.until("the first attempt", WAIT, () -> !attempts.isEmpty());
            Await.until("the run to wait for its retry", WAIT,
                    () -> "RUNNABLE".equals(RetryTest.run(dataSource, id).get("status"))
                            && Integer.valueOf(2).equals(RetryTest.run(dataSource, id).get("attempt")));
            assertThat(client.cancel(id, "no more retries")).isEqualTo(CancelResult.REQUESTED);
            assertThat(client.awaitCompletion(id, Duration.ofSeconds(5))).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(attempts).containsExactly(1);
            assertThat(ran).containsExactly("compensated s0");
        }
    }

    @Test
    void a_compensation_that_checks_give_up_if_requested_still_runs_to_the_end(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("cancel-compcheck-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("cancel-compcheck-child", Empty.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "cancel-compcheck-root-saga")
                .step("r0", step -> {
                })
                .compensateWith((step, cause) -> {
                    step.giveUpIfRequested(); // e.g. shared helper code; compensation is not cancellable
                    ran.add("compensated r0");
                })
                .step("r1", step -> step.launch(childTopic, new Empty()))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "cancel-compcheck-child-saga").step("c0", step -> {
        }).build();
        Coop.engine(dataSource).workers(1).register(child).start().close();
        try (CoopEngine rootEngine = Coop.engine(dataSource).workers(2).register(root).start()) {
            CoopClient client = rootEngine.client();
            MessageId id = client.launch(rootTopic, new Empty());
            Await.until("the root to wait for its child", WAIT,
                    () -> client.statuses(id).equals(List.of(RunStatus.WAITING)));
            assertThat(client.cancel(id, "stop")).isEqualTo(CancelResult.REQUESTED);
            try (CoopEngine childEngine = Coop.engine(dataSource).workers(2).register(child).start()) {
                Outcome outcome = client.awaitCompletion(id, WAIT);
                assertThat(outcome).as(EventLog.table(client.events(id))).isEqualTo(Outcome.ROLLED_BACK);
            }
        }
        assertThat(ran).containsExactly("compensated r0");
    }

    // --- helpers

    static void assertGaveUpBecauseCancelled(Failure f, String saga) {
        assertThat(f.type()).isEqualTo(GaveUpException.TYPE);
        assertThat(f.source()).startsWith(saga + "[");
        assertThat(f.causes()).extracting(Failure::type).containsExactly(CancellationRequestedException.TYPE);
        assertThat(f.causes().getFirst().source()).isEqualTo("coop-client");
    }

    static boolean returnsWithin(CompletableFuture<?> future, Duration timeout) throws Exception {
        try {
            future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        }
    }
}
