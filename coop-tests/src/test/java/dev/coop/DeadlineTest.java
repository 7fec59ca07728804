package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.failure.AbsoluteDeadlineMissedException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.DeadlineMissedException;
import dev.coop.failure.HappyPathDeadlineMissedException;
import dev.coop.failure.RollbackPathDeadlineMissedException;
import dev.coop.failure.Failure;
import dev.coop.failure.GaveUpException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Deadlines are context entries: inherited, only tightened, and missing one makes the run give up. */
class DeadlineTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final Duration SPIN_LIMIT = Duration.ofSeconds(15);

    @Test
    void a_parent_waiting_past_its_deadline_for_a_child_whose_engine_is_down_rolls_back_and_the_child_never_runs(
            DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("deadline-unstarted-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("deadline-unstarted-child", Empty.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "root-handler")
                .step("0", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> ran.add("compensated root:0"))
                .step("1", step -> ran.add("1 (must not run)"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "child-handler")
                .step("c0", step -> ran.add("c0 at depth " + step.lineage().depth()))
                .build();
        dev.coop.test.TestClock clock = new dev.coop.test.TestClock(); // the deadline passes when the test says
        Coop.engine(dataSource).clock(clock).workers(1).register(child).start().close(); // engine B: registered, down

        MessageId id;
        try (CoopEngine engineA = Coop.engine(dataSource).clock(clock).workers(2).register(root).start()) {
            CoopClient client = engineA.client();
            Instant deadline = clock.instant().plus(Duration.ofHours(1));
            id = client.launch(rootTopic, new Empty(),
                    CooperationContext.of(Deadlines.HAPPY_PATH, Deadline.at(deadline, "checkout-api")));
            MessageId launched = id;
            dev.coop.test.Await.until("the root's first step committed, waiting for its child", WAIT,
                    () -> client.events(launched).stream().anyMatch(e -> e.type() == EventType.SUSPENDED
                            && "root-handler".equals(e.saga())));
            assertThat(client.events(id)).as("before the deadline the parent waits")
                    .noneMatch(e -> e.type() == EventType.ROLLING_BACK);
            clock.advance(Duration.ofHours(2)); // past the deadline, with the child's engine still down
            assertThat(client.awaitCompletion(id, WAIT)).as("while engine B is down").isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            String log = dev.coop.test.EventLog.table(events);
            assertThat(ran).as(log).containsExactly("compensated root:0");
            Event rootGaveUp = events.stream()
                    .filter(e -> e.type() == EventType.ROLLING_BACK && "root-handler".equals(e.saga()))
                    .findFirst().orElseThrow();
            Failure gaveUp = Failure.fromJson(rootGaveUp.exception());
            assertThat(gaveUp.type()).isEqualTo(GaveUpException.TYPE);
            assertThat(gaveUp.causes().getFirst().type()).isEqualTo(HappyPathDeadlineMissedException.TYPE);
            assertThat(events.stream().filter(e -> "child-handler".equals(e.saga())).map(Event::type))
                    .as(log).containsExactly(EventType.ROLLING_BACK, EventType.ROLLED_BACK);
            dev.coop.test.Invariants.assertAll(events);
        }

        try (CoopEngine engineB = Coop.engine(dataSource).workers(2).register(child).start()) {
            CoopClient client = engineB.client();
            MessageId later = client.launch(childTopic, new Empty());
            assertThat(client.awaitCompletion(later, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ran).as("engine B is back; only the later message ran")
                    .containsExactly("compensated root:0", "c0 at depth 2");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        }
    }

    @Test
    void a_child_inherits_and_tightens_a_deadline_misses_it_and_the_parent_sees_source_and_trace(
            DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("deadline-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("deadline-child", Empty.class);
        Topic<Empty> looseTopic = Topic.of("deadline-loose", Empty.class);
        Map<String, Deadline> seen = new ConcurrentHashMap<>();
        List<String> trace = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "deadline-root-handler")
                .step("loosen", step -> step.launch(looseTopic, new Empty(), CooperationContext
                        .of(Deadlines.HAPPY_PATH, Deadline.at(step.startedAt().plus(Duration.ofDays(2)), "too late"))))
                .step("tighten", step -> step.launch(childTopic, new Empty(), CooperationContext.of(
                        Deadlines.HAPPY_PATH, Deadline.at(step.startedAt().plusSeconds(2), "root tighten step"))))
                .compensateWith((step, cause) -> trace.add("root compensates"))
                .build();
        Saga<Empty> loose = Saga.on(looseTopic, "deadline-loose-handler")
                .step("look", step -> seen.put("loose", step.deadline().orElseThrow()))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "deadline-child-handler")
                .step("look", step -> seen.put("child", step.deadline().orElseThrow()))
                .compensateWith((step, cause) -> trace.add("child compensates"))
                .sleep("too long", Duration.ofMinutes(10)) // woken at the deadline instead, to give up
                .step("never", step -> trace.add("never"))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child, loose).start()) {
            Instant apiDeadline = engine.client().now().plus(Duration.ofDays(1));
            MessageId id = engine.client().launch(rootTopic, new Empty(),
                    CooperationContext.of(Deadlines.HAPPY_PATH, Deadline.at(apiDeadline, "checkout-api")));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);

            assertThat(seen.get("loose").at()).isEqualTo(apiDeadline); // a child cannot loosen it
            assertThat(seen.get("loose").source()).isEqualTo("checkout-api");
            Deadline tightened = seen.get("child");
            assertThat(tightened.source()).isEqualTo("root tighten step");
            assertThat(tightened.trace()).containsExactly(apiDeadline + " from checkout-api");
            assertThat(trace).containsExactly("child compensates", "root compensates");

            Hierarchy tree = engine.client().tree(id);
            String rendered = tree.toString() + engine.client().events(id).stream()
                    .filter(e -> e.exception() != null).map(Event::exception).toList();
            assertThat(rendered).contains("DeadlineMissedException").contains("root tighten step")
                    .contains("tightened from " + apiDeadline + " from checkout-api");
            Event childGaveUp = engine.client().events(id).stream()
                    .filter(e -> e.type() == EventType.ROLLING_BACK && "deadline-child-handler".equals(e.saga()))
                    .findFirst().orElseThrow();
            Failure failure = Failure.fromJson(childGaveUp.exception());
            assertThat(failure.type()).isEqualTo(GaveUpException.TYPE);
            assertThat(failure.causes().getFirst().type()).isEqualTo(HappyPathDeadlineMissedException.TYPE);
            assertThat(CooperationException.of(failure).getCause())
                    .isInstanceOf(HappyPathDeadlineMissedException.class);
            assertThat(failure.causes().getFirst().message()).startsWith("Happy-path deadline " + tightened.at()
                    + " (set by root tighten step; tightened from " + apiDeadline + " from checkout-api)");
        }
    }

    @Test
    void a_long_step_gives_up_cooperatively_when_its_deadline_passes(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("deadline-cooperative", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "deadline-cooperative-handler")
                .step("long", step -> {
                    long limit = System.nanoTime() + SPIN_LIMIT.toNanos();
                    while (System.nanoTime() < limit) {
                        step.giveUpIfRequested(); // throws once the deadline passed
                        Thread.onSpinWait();
                    }
                    throw new AssertionError("the deadline never fired");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            Instant at = engine.client().now().plusMillis(300);
            MessageId id = engine.client().launch(topic, new Empty(),
                    CooperationContext.of(Deadlines.ABSOLUTE, Deadline.at(at, "test")));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            Event rollingBack = engine.client().events(id).stream()
                    .filter(e -> e.type() == EventType.ROLLING_BACK).findFirst().orElseThrow();
            Failure failure = Failure.fromJson(rollingBack.exception());
            assertThat(failure.type()).isEqualTo(GaveUpException.TYPE);
            assertThat(failure.causes().getFirst().message()).startsWith("Absolute deadline " + at + " (set by test)");
            assertThat(failure.causes().getFirst().type()).isEqualTo(AbsoluteDeadlineMissedException.TYPE);
            assertThat(CooperationException.of(failure).getCause()).isInstanceOf(AbsoluteDeadlineMissedException.class)
                    .isInstanceOf(DeadlineMissedException.class);
        }
    }

    @Test
    void the_rollback_deadline_fires(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("deadline-rollback", Empty.class);
        List<String> trace = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "deadline-rollback-handler")
                .step("first", step -> {
                })
                .compensateWith((step, cause) -> trace.add("undo first"))
                .step("second", step -> {
                })
                .compensateWith((step, cause) -> {
                    trace.add("undo second (slow)");
                    Instant deadline = step.deadline().orElseThrow().at();
                    long limit = System.nanoTime() + SPIN_LIMIT.toNanos();
                    while (!Instant.now().isAfter(deadline.plusMillis(50)) && System.nanoTime() < limit) {
                        Thread.onSpinWait(); // a compensation that takes longer than the rollback may
                    }
                })
                .step("fails", step -> {
                    throw new IllegalStateException("start the rollback");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            // long enough for the steps and the first compensation to start on a loaded machine
            Instant at = engine.client().now().plusSeconds(2);
            MessageId id = engine.client().launch(topic, new Empty(),
                    CooperationContext.of(Deadlines.ROLLBACK_PATH, Deadline.at(at, "ops policy")));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLBACK_FAILED);
            assertThat(trace).containsExactly("undo second (slow)"); // the rollback gave up before "first"
            Event failed = engine.client().events(id).stream()
                    .filter(e -> e.type() == EventType.ROLLBACK_FAILED).findFirst().orElseThrow();
            Failure failure = Failure.fromJson(failed.exception());
            assertThat(failure.type()).isEqualTo(GaveUpException.TYPE);
            assertThat(failure.causes().getFirst().type()).isEqualTo(RollbackPathDeadlineMissedException.TYPE);
            assertThat(CooperationException.of(failure).getCause())
                    .isInstanceOf(RollbackPathDeadlineMissedException.class)
                    .isInstanceOf(DeadlineMissedException.class);
            assertThat(failure.causes().getFirst().message()).startsWith("Rollback deadline " + at
                    + " (set by ops policy)");
            assertThat(failure.causes()).as("the reason once, then what the rollback undid").hasSize(2);
            assertThat(failure.causes().get(1).message()).isEqualTo("start the rollback");
        }
    }

    @Test
    void deadlines_only_tighten_and_the_absolute_one_applies_to_both_paths() {
        Instant t = Instant.parse("2030-01-01T00:00:00Z");
        CooperationContext context = CooperationContext.of(Deadlines.HAPPY_PATH, Deadline.at(t, "a"))
                .with(Deadlines.HAPPY_PATH, Deadline.at(t.plusSeconds(5), "later"))
                .with(Deadlines.HAPPY_PATH, Deadline.at(t.minusSeconds(5), "earlier"));
        Deadline d = context.get(Deadlines.HAPPY_PATH).orElseThrow();
        assertThat(d.at()).isEqualTo(t.minusSeconds(5));
        assertThat(d.source()).isEqualTo("earlier");
        assertThat(d.trace()).containsExactly(t + " from a");
        assertThat(context.plus(CooperationContext.of(Deadlines.HAPPY_PATH, Deadline.at(t, "plus"))))
                .isEqualTo(context);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> context.without(Deadlines.HAPPY_PATH.name()))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("only tightened");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> context.with(Deadlines.HAPPY_PATH, null))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("only tightened");
        org.assertj.core.api.Assertions
                .assertThatThrownBy(() -> context.withRawJson(Deadlines.ABSOLUTE.name(), "null"))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("only tightened");
    }
}
