package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Closing an engine stops claiming, lets steps in flight finish within a bound, and leaves no thread behind. */
class ShutdownTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void closing_an_engine_lets_the_step_in_flight_commit_and_then_claims_nothing(DataSource dataSource)
            throws InterruptedException {
        Topic<Empty> topic = Topic.of("shutdown-in-flight", Empty.class);
        StepGate gate = new StepGate();
        AtomicInteger nextSteps = new AtomicInteger();
        Saga<Empty> saga = Saga.on(topic, "shutdown-in-flight-handler")
                .step("slow", step -> {
                    if (!gate.isOpen()) {
                        gate.pass();
                    }
                })
                .step("next", step -> nextSteps.incrementAndGet())
                .build();
        CoopClient client = Coop.client(dataSource);
        // one worker, busy with the step in flight (a second worker could race the shutdown: see the next test)
        CoopEngine closing = Coop.engine(dataSource).name("closing").workers(1).register(saga).start();
        String closingId = closing.id();
        MessageId inFlight;
        try {
            inFlight = client.launch(topic, new Empty());
            gate.awaitArrivals(1, WAIT);

            AtomicBoolean closeReturned = new AtomicBoolean();
            Thread closer = Thread.ofPlatform().name("test-closer").start(() -> {
                closing.close();
                closeReturned.set(true);
            });
            // close() has stopped claiming and now waits for the step in flight
            Await.until("close() to wait for the step in flight", WAIT,
                    () -> closer.getState() == Thread.State.TIMED_WAITING);
            assertThat(closeReturned).as("close() returned while a step was in flight").isFalse();

            gate.open();
            closer.join(WAIT.toMillis());
            assertThat(closeReturned).as("close() returned once the step finished").isTrue();
        } finally {
            gate.open();
            closing.close();
        }

        // the step in flight committed; the engine stopped before the next step
        List<Event> events = client.events(inFlight);
        assertThat(events).filteredOn(e -> e.type() == EventType.SUSPENDED).extracting(Event::step, Event::engine)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("slow", closingId));
        assertThat(client.statuses(inFlight)).containsExactly(RunStatus.RUNNABLE);
        assertThat(nextSteps).hasValue(0);
        assertThat(liveThreadsOf(closingId)).as("threads of the closed engine").isEmpty();

        // with no engine thread left, a new message stays RUNNABLE until another engine starts
        MessageId afterClose = client.launch(topic, new Empty());
        assertThat(client.statuses(afterClose)).containsExactly(RunStatus.RUNNABLE);
        try (CoopEngine successor = Coop.engine(dataSource).name("successor").workers(2).register(saga).start()) {
            assertThat(client.awaitCompletion(inFlight, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(afterClose, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.events(inFlight)).filteredOn(e -> "next".equals(e.step()))
                    .extracting(Event::engine).containsOnly(successor.id());
            Invariants.assertAll(client.events(inFlight));
        }
    }

    @Test
    void a_step_outlasting_the_shutdown_timeout_is_interrupted_rolled_back_and_redone_by_another_engine(
            DataSource dataSource) throws InterruptedException {
        Topic<Empty> topic = Topic.of("shutdown-timeout", Empty.class);
        StepGate gate = new StepGate();
        AtomicInteger attempts = new AtomicInteger();
        Saga<Empty> saga = Saga.on(topic, "shutdown-timeout-handler")
                .step("stubborn", step -> {
                    if (attempts.incrementAndGet() == 1) {
                        gate.pass(); // never opened: only the shutdown's interrupt ends this attempt
                    }
                })
                .build();
        CoopClient client = Coop.client(dataSource);
        MessageId id;
        String firstId;
        try (CoopEngine first = Coop.engine(dataSource).name("impatient").workers(1)
                .shutdownTimeout(Duration.ofMillis(100)).register(saga).start()) {
            firstId = first.id();
            id = client.launch(topic, new Empty());
            gate.awaitArrivals(1, WAIT);
        }
        try (CoopEngine second = Coop.engine(dataSource).name("patient").workers(1)
                .pollInterval(Duration.ofMillis(50)).register(saga).start()) {
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = client.events(id);
            // the interrupted attempt left no failure and no step: at most the SEEN of the first engine, which saw the
            // run start; the step committed once, by the second engine
            assertThat(events).extracting(Event::type).doesNotContain(EventType.ROLLING_BACK, EventType.ROLLED_BACK);
            assertThat(events).filteredOn(e -> e.type() == EventType.SUSPENDED).extracting(Event::engine)
                    .containsExactly(second.id());
            assertThat(events).filteredOn(e -> firstId.equals(e.engine())).extracting(Event::type)
                    .containsOnly(EventType.SEEN);
            assertThat(events).filteredOn(e -> e.type() == EventType.SEEN).hasSize(1);
            assertThat(attempts).hasValue(2);
            Invariants.assertAll(events);
        } finally {
            gate.open();
        }
    }

    @Test
    void a_step_that_ignores_interrupts_cannot_commit_after_close_returned(DataSource dataSource) throws Exception {
        Topic<Empty> topic = Topic.of("shutdown-deaf", Empty.class);
        java.util.concurrent.CountDownLatch running = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch returned = new java.util.concurrent.CountDownLatch(1);
        AtomicInteger attempts = new AtomicInteger();
        Saga<Empty> saga = Saga.on(topic, "shutdown-deaf-handler")
                .step("deaf", step -> {
                    if (attempts.incrementAndGet() == 1) {
                        running.countDown();
                        while (true) { // swallows interrupts until the test lets it go
                            try {
                                if (release.await(WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)) {
                                    break;
                                }
                            } catch (InterruptedException ignored) {
                                // deaf
                            }
                        }
                        returned.countDown();
                    }
                })
                .build();
        CoopClient client = Coop.client(dataSource);
        MessageId id;
        String firstId;
        try (CoopEngine first = Coop.engine(dataSource).name("deaf").workers(1)
                .shutdownTimeout(Duration.ofMillis(100)).register(saga).start()) {
            firstId = first.id();
            id = client.launch(topic, new Empty());
            assertThat(running.await(WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)).isTrue();
        }
        release.countDown(); // close() returned: the step goes on and tries to commit, too late
        assertThat(returned.await(WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)).isTrue();
        try (CoopEngine second = Coop.engine(dataSource).name("after-deaf").workers(1)
                .pollInterval(Duration.ofMillis(50)).register(saga).start()) {
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = client.events(id);
            assertThat(events).filteredOn(e -> e.type() == EventType.SUSPENDED || e.type() == EventType.COMMITTED)
                    .extracting(Event::engine).containsOnly(second.id());
            assertThat(events).filteredOn(e -> firstId.equals(e.engine())).extracting(Event::type)
                    .doesNotContain(EventType.SUSPENDED, EventType.COMMITTED); // its session died with the claim
            assertThat(attempts).hasValue(2);
        }
    }

    /**
     * Stopping must also stop a worker that took a task just before close() and is still on its way to claiming (here:
     * waiting for a connection of its pool). Once close() has begun, no step may start, even when the claim finds a
     * runnable run: the worker should check that the engine stopped after claiming and before executing, and release
     * the run (roll back the claim) if so.
     */
    @Test
    void a_worker_still_on_its_way_to_claim_when_the_engine_closes_starts_no_step(DataSource dataSource)
            throws Exception {
        Topic<Empty> topic = Topic.of("shutdown-late-claim", Empty.class);
        StepGate gate = new StepGate();
        List<String> started = new java.util.concurrent.CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "shutdown-late-claim-handler")
                .step("slow", step -> {
                    started.add(step.messageId() + "/slow");
                    if (!gate.isOpen()) {
                        gate.pass();
                    }
                })
                .step("next", step -> started.add(step.messageId() + "/next"))
                .build();
        CoopClient client = Coop.client(dataSource);
        // 2 workers + 1 listener + 1 for clients: the smallest pool the engine accepts
        com.zaxxer.hikari.HikariDataSource pool = db.newDataSource(4);
        CoopEngine closing = Coop.engine(pool).name("late-claim").workers(2).pollInterval(Duration.ofHours(1))
                .register(saga).start();
        List<java.sql.Connection> held = new java.util.ArrayList<>();
        MessageId first;
        MessageId second;
        try {
            first = client.launch(topic, new Empty());
            gate.awaitArrivals(1, WAIT);
            // take the pool's spare connections, so that the idle worker, once woken, waits for one
            Await.until("the engine's listener and busy worker to hold their connections", WAIT,
                    () -> pool.getHikariPoolMXBean().getActiveConnections() == 2);
            held.add(pool.getConnection());
            held.add(pool.getConnection());
            second = client.launch(topic, new Empty()); // its notification wakes the idle worker
            Await.until("the idle worker to wait for a connection", WAIT,
                    () -> pool.getHikariPoolMXBean().getThreadsAwaitingConnection() == 1);

            Thread closer = Thread.ofPlatform().name("test-closer").start(closing::close);
            Await.until("close() to wait for the step in flight", WAIT,
                    () -> closer.getState() == Thread.State.TIMED_WAITING);
            gate.open(); // the step in flight commits and hands its connection to the waiting worker
            closer.join(WAIT.toMillis());
            assertThat(closer.isAlive()).isFalse();
        } finally {
            gate.open();
            for (java.sql.Connection c : held) {
                c.close();
            }
            closing.close();
        }
        assertThat(started).as("steps that started in the closing engine").containsExactly(first + "/slow");
        assertThat(client.statuses(second)).containsExactly(RunStatus.RUNNABLE);
        assertThat(client.events(second)).extracting(Event::type).containsExactly(EventType.EMITTED);
    }

    @Test
    void closing_an_idle_engine_is_quick_and_idempotent(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("shutdown-idle", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "shutdown-idle-handler").step("one", step -> {
        }).build();
        CoopEngine engine = Coop.engine(dataSource).register(saga).start();
        String id = engine.id();
        MessageId message = engine.client().launch(topic, new Empty());
        assertThat(engine.client().awaitCompletion(message, WAIT)).isEqualTo(Outcome.COMMITTED);
        long start = System.nanoTime();
        engine.close();
        engine.close();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
        assertThat(liveThreadsOf(id)).isEmpty();
        // its client keeps working for inspection
        assertThat(engine.client().statuses(message)).containsExactly(RunStatus.COMMITTED);
    }

    static List<String> liveThreadsOf(String engineId) {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(name -> name.contains(engineId)).toList();
    }
}
