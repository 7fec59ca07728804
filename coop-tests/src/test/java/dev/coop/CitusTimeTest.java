package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.failure.Failure;
import dev.coop.failure.GaveUpException;
import dev.coop.failure.HappyPathDeadlineMissedException;
import dev.coop.failure.RollbackPathDeadlineMissedException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import dev.coop.test.TestClock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Deadlines and durable time on a three-node Citus cluster (the key assertions of {@code DeadlineTest} and
 * {@code DurableTimeTest}): a parent past its deadline settles its unstarted child without running it
 * ({@code RootChildren}) and rolls back; a child tightens an inherited deadline, is woken from its sleep at it and
 * gives up; the rollback deadline fails a slow rollback; sleeps, steps at an instant, delayed launches and
 * children, periodic steps, and a sleep across an engine restart. Engines poll every 50 ms (a worker's notifications
 * do not reach the coordinator), so a due time is met within a poll.
 */
class CitusTimeTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Wake(Instant at) {
    }

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    static CoopEngine.Builder engine() {
        return CitusHappyPathTest.engine(db.dataSource());
    }

    @Test
    void a_parent_waiting_past_its_deadline_settles_its_unstarted_child_and_rolls_back() {
        Topic<Empty> rootTopic = Topic.of("citus-deadline-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-deadline-child", Empty.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "citus-deadline-root")
                .step("0", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> ran.add("compensated root:0"))
                .step("1", step -> ran.add("1 (must not run)"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-deadline-child")
                .step("c0", step -> ran.add("c0"))
                .build();
        TestClock clock = new TestClock();
        engine().clock(clock).workers(1).register(child).start().close(); // the child's engine: registered, down
        try (CoopEngine engine = engine().clock(clock).workers(2).register(root).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Empty(), CooperationContext.of(Deadlines.HAPPY_PATH,
                    Deadline.at(clock.instant().plus(Duration.ofHours(1)), "checkout-api")));
            Await.until("the root waits for its child", WAIT, () -> client.events(id).stream()
                    .anyMatch(e -> e.type() == EventType.SUSPENDED && "citus-deadline-root".equals(e.saga())));
            clock.advance(Duration.ofHours(2));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            String log = EventLog.table(events);
            assertThat(ran).as(log).containsExactly("compensated root:0");
            Failure gaveUp = Failure.fromJson(events.stream().filter(e -> e.type() == EventType.ROLLING_BACK
                    && "citus-deadline-root".equals(e.saga())).findFirst().orElseThrow().exception());
            assertThat(gaveUp.type()).isEqualTo(GaveUpException.TYPE);
            assertThat(gaveUp.causes().getFirst().type()).isEqualTo(HappyPathDeadlineMissedException.TYPE);
            assertThat(events.stream().filter(e -> "citus-deadline-child".equals(e.saga())).map(Event::type))
                    .as(log).containsExactly(EventType.ROLLING_BACK, EventType.ROLLED_BACK);
            assertThat(client.statuses(id)).containsOnly(RunStatus.ROLLED_BACK);
            Invariants.assertAll(events);
        }
    }

    @Test
    void a_child_tightens_the_inherited_deadline_is_woken_from_its_sleep_at_it_and_gives_up() {
        Topic<Empty> rootTopic = Topic.of("citus-tighten-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-tighten-child", Empty.class);
        Map<String, Deadline> seen = new ConcurrentHashMap<>();
        List<String> trace = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "citus-tighten-root")
                .step("tighten", step -> step.launch(childTopic, new Empty(), CooperationContext.of(
                        Deadlines.HAPPY_PATH, Deadline.at(step.startedAt().plusSeconds(2), "root tighten step"))))
                .compensateWith((step, cause) -> trace.add("root compensates"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-tighten-child")
                .step("look", step -> seen.put("child", step.deadline().orElseThrow()))
                .compensateWith((step, cause) -> trace.add("child compensates"))
                .sleep("too long", Duration.ofMinutes(10)) // woken at the deadline instead, to give up
                .step("never", step -> trace.add("never"))
                .build();
        try (CoopEngine engine = engine().register(root, child).start()) {
            Instant api = engine.client().now().plus(Duration.ofDays(1));
            MessageId id = engine.client().launch(rootTopic, new Empty(),
                    CooperationContext.of(Deadlines.HAPPY_PATH, Deadline.at(api, "checkout-api")));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(seen.get("child").source()).isEqualTo("root tighten step");
            assertThat(seen.get("child").trace()).containsExactly(api + " from checkout-api");
            assertThat(trace).containsExactly("child compensates", "root compensates");
            List<Event> events = engine.client().events(id);
            Failure failure = Failure.fromJson(events.stream().filter(e -> e.type() == EventType.ROLLING_BACK
                    && "citus-tighten-child".equals(e.saga())).findFirst().orElseThrow().exception());
            assertThat(failure.type()).isEqualTo(GaveUpException.TYPE);
            assertThat(failure.causes().getFirst().type()).isEqualTo(HappyPathDeadlineMissedException.TYPE);
            Invariants.assertAll(events);
        }
    }

    @Test
    void the_rollback_deadline_fails_a_slow_rollback() {
        Topic<Empty> topic = Topic.of("citus-deadline-rollback", Empty.class);
        List<String> trace = new CopyOnWriteArrayList<>();
        TestClock clock = new TestClock();
        Saga<Empty> saga = Saga.on(topic, "citus-deadline-rollback")
                .step("first", step -> {
                })
                .compensateWith((step, cause) -> trace.add("undo first"))
                .step("second", step -> {
                })
                .compensateWith((step, cause) -> {
                    trace.add("undo second (slow)");
                    clock.advance(Duration.ofHours(2)); // the compensation outlasts the rollback's deadline
                })
                .step("fails", step -> {
                    throw new IllegalStateException("start the rollback");
                })
                .build();
        try (CoopEngine engine = engine().clock(clock).register(saga).start()) {
            Instant at = clock.instant().plus(Duration.ofHours(1));
            MessageId id = engine.client().launch(topic, new Empty(),
                    CooperationContext.of(Deadlines.ROLLBACK_PATH, Deadline.at(at, "ops policy")));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLBACK_FAILED);
            assertThat(trace).containsExactly("undo second (slow)");
            Failure failure = Failure.fromJson(engine.client().events(id).stream()
                    .filter(e -> e.type() == EventType.ROLLBACK_FAILED).findFirst().orElseThrow().exception());
            assertThat(failure.type()).isEqualTo(GaveUpException.TYPE);
            assertThat(failure.causes().getFirst().type()).isEqualTo(RollbackPathDeadlineMissedException.TYPE);
            assertThat(failure.causes().get(1).message()).isEqualTo("start the rollback");
        }
    }

    @Test
    void sleeps_steps_at_an_instant_and_periodic_steps_wait_their_time() {
        Topic<Empty> sleepy = Topic.of("citus-sleepy", Empty.class);
        Topic<Wake> scheduled = Topic.of("citus-scheduled", Wake.class);
        Topic<Empty> periodic = Topic.of("citus-periodic", Empty.class);
        List<Instant> ticks = new CopyOnWriteArrayList<>();
        Saga<Empty> nap = Saga.on(sleepy, "citus-sleepy")
                .step("before", step -> {
                })
                .sleep("nap", Duration.ofMillis(700))
                .step("after", step -> {
                })
                .build();
        Saga<Wake> at = Saga.on(scheduled, "citus-scheduled")
                .sleepUntil("until", step -> step.payload().at())
                .step("at", step -> {
                })
                .build();
        Saga<Empty> tick = Saga.on(periodic, "citus-periodic")
                .periodic("tick", Duration.ofMillis(300), 3, step -> ticks.add(step.startedAt()))
                .step("done", step -> {
                })
                .build();
        try (CoopEngine engine = engine().register(nap, at, tick).start()) {
            CoopClient client = engine.client();
            MessageId napping = client.launch(sleepy, new Empty());
            Instant when = client.now().plusMillis(600);
            MessageId waiting = client.launch(scheduled, new Wake(when));
            MessageId ticking = client.launch(periodic, new Empty());
            MessageId past = client.launch(scheduled, new Wake(Instant.EPOCH));

            assertThat(client.awaitCompletion(napping, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = client.events(napping);
            assertThat(Duration.between(suspended(events, "nap").startedAt(), suspended(events, "after").startedAt()))
                    .isGreaterThanOrEqualTo(Duration.ofMillis(700));
            Invariants.assertAll(events);
            assertThat(client.awaitCompletion(waiting, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(suspended(client.events(waiting), "at").startedAt().toInstant()).isAfterOrEqualTo(when);
            assertThat(client.awaitCompletion(past, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(ticking, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ticks).hasSize(3);
            for (int i = 1; i < ticks.size(); i++) {
                assertThat(Duration.between(ticks.get(i - 1), ticks.get(i))).isGreaterThanOrEqualTo(
                        Duration.ofMillis(300));
            }
            Invariants.assertAll(client.events(ticking));
        }
    }

    @Test
    void a_delayed_launch_and_a_delayed_child_start_at_their_time() {
        Topic<Empty> delayed = Topic.of("citus-delayed", Empty.class);
        Topic<Empty> parentTopic = Topic.of("citus-delayed-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-delayed-child", Empty.class);
        Map<String, Instant> at = new ConcurrentHashMap<>();
        Saga<Empty> lone = Saga.on(delayed, "citus-delayed").step("run", step -> {
        }).build();
        Saga<Empty> parent = Saga.on(parentTopic, "citus-delayed-parent")
                .step("launch", step -> {
                    at.put("child", step.startedAt().plusMillis(700));
                    step.launch(childTopic, new Empty(), at.get("child"));
                })
                .step("after", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-delayed-child").step("run", step -> {
        }).build();
        try (CoopEngine engine = engine().register(lone, parent, child).start()) {
            CoopClient client = Coop.client(db.dataSource()); // a client without an engine launches
            Instant when = client.now().plusMillis(800);
            MessageId id = client.launch(delayed, new Empty(), when);
            MessageId family = client.launch(parentTopic, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(seen(client.events(id), "citus-delayed").createdAt().toInstant()).isAfterOrEqualTo(when);
            assertThat(client.awaitCompletion(family, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = client.events(family);
            String log = EventLog.table(events);
            Event childSeen = seen(events, "citus-delayed-child");
            assertThat(childSeen.createdAt().toInstant()).as(log).isAfterOrEqualTo(at.get("child"));
            assertThat(suspended(events, "after").id()).as(log).isGreaterThan(childSeen.id());
            Invariants.assertAll(events);
        }
    }

    @Test
    void a_sleeping_run_survives_an_engine_restart() {
        Topic<Empty> topic = Topic.of("citus-sleep-restart", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-sleep-restart")
                .sleep("nap", Duration.ofMillis(1500))
                .step("after", step -> {
                })
                .build();
        MessageId id;
        try (CoopEngine engine = engine().register(saga).start()) {
            id = engine.client().launch(topic, new Empty());
            Await.until("the nap step committed", WAIT,
                    () -> engine.client().events(id).stream().anyMatch(e -> "nap".equals(e.step())));
        }
        try (CoopEngine restarted = engine().register(saga).start()) {
            assertThat(restarted.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = restarted.client().events(id);
            assertThat(Duration.between(suspended(events, "nap").startedAt(), suspended(events, "after").startedAt()))
                    .isGreaterThanOrEqualTo(Duration.ofMillis(1500));
            Invariants.assertAll(events);
        }
    }

    private static Event suspended(List<Event> events, String step) {
        return events.stream().filter(e -> e.type() == EventType.SUSPENDED && step.equals(e.step())).findFirst()
                .orElseThrow(() -> new AssertionError("no SUSPENDED " + step + " in " + EventLog.table(events)));
    }

    private static Event seen(List<Event> events, String saga) {
        return events.stream().filter(e -> e.type() == EventType.SEEN && saga.equals(e.saga())).findFirst()
                .orElseThrow(() -> new AssertionError("no SEEN of " + saga + " in " + EventLog.table(events)));
    }
}
