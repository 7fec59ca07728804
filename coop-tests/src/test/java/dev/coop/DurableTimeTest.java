package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Sleep steps, steps scheduled at an instant and delayed launches: the run is due at a time, an idle engine that
 * never polls wakes for it, and the wait survives a restart. Short real due times; nothing here sleeps.
 */
class DurableTimeTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    /** Engines here never poll: only notifications and computed due times wake them. */
    static final Duration NEVER = Duration.ofHours(1);

    record Wake(Instant at) {
    }

    @Test
    void a_sleep_step_delays_the_next_step_without_polling(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("sleepy", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "sleepy-handler")
                .step("before", step -> {
                })
                .sleep("nap", Duration.ofMillis(700))
                .step("after", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(NEVER).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = engine.client().events(id);
            Event nap = step(events, "nap");
            Event after = step(events, "after");
            assertThat(Duration.between(nap.startedAt(), after.startedAt())).isGreaterThanOrEqualTo(
                    Duration.ofMillis(700));
        }
    }

    @Test
    void a_step_scheduled_at_an_instant_from_the_payload_runs_then(DataSource dataSource) {
        Topic<Wake> topic = Topic.of("scheduled", Wake.class);
        Saga<Wake> saga = Saga.on(topic, "scheduled-handler")
                .sleepUntil("until", step -> step.payload().at())
                .step("at", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(NEVER).register(saga).start()) {
            Instant at = dbNow(engine).plusMillis(600);
            MessageId id = engine.client().launch(topic, new Wake(at));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(step(engine.client().events(id), "at").startedAt().toInstant()).isAfterOrEqualTo(at);

            // an instant in the past does not wait
            MessageId past = engine.client().launch(topic, new Wake(Instant.EPOCH));
            assertThat(engine.client().awaitCompletion(past, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void a_delayed_launch_starts_at_its_time_on_an_engine_that_never_polls(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("delayed", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "delayed-handler").step("run", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(NEVER).register(saga).start()) {
            // a client without an engine launches, so only the notification tells the engine when it is due
            CoopClient client = Coop.client(dataSource);
            Instant at = dbNow(engine).plusMillis(800);
            MessageId id = client.launch(topic, new Empty(), at);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            Event seen = client.events(id).stream().filter(e -> e.type() == EventType.SEEN).findFirst()
                    .orElseThrow();
            assertThat(seen.createdAt().toInstant()).isAfterOrEqualTo(at);
        }
    }

    @Test
    void a_step_launches_a_delayed_child_that_the_barrier_awaits_and_a_delayed_global_message_it_does_not(
            DataSource dataSource) {
        Topic<Empty> parentTopic = Topic.of("delayed-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("delayed-child", Empty.class);
        Topic<Empty> laterTopic = Topic.of("delayed-global", Empty.class);
        java.util.Map<String, Instant> at = new java.util.concurrent.ConcurrentHashMap<>();
        java.util.Map<String, MessageId> launched = new java.util.concurrent.ConcurrentHashMap<>();
        Saga<Empty> parent = Saga.on(parentTopic, "delayed-parent-handler")
                .step("launch", step -> {
                    at.put("child", step.startedAt().plusMillis(700));
                    at.put("global", step.startedAt().plus(Duration.ofHours(1)));
                    launched.put("child", step.launch(childTopic, new Empty(), at.get("child")));
                    launched.put("global", step.launchOnGlobalScope(laterTopic, new Empty(), at.get("global")));
                })
                .step("after", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "delayed-child-handler").step("run", step -> {
        }).build();
        Saga<Empty> later = Saga.on(laterTopic, "delayed-global-handler").step("run", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(NEVER).register(parent, child, later).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(parentTopic, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = client.events(id);
            String log = dev.coop.test.EventLog.table(events);
            Event childSeen = events.stream().filter(e -> e.type() == EventType.SEEN
                    && "delayed-child-handler".equals(e.saga())).findFirst().orElseThrow();
            assertThat(childSeen.createdAt().toInstant()).as(log).isAfterOrEqualTo(at.get("child"));
            assertThat(step(events, "after").id()).as("the barrier waited for the delayed child; " + log)
                    .isGreaterThan(childSeen.id());
            dev.coop.test.Invariants.assertAll(events);

            // the parent committed without waiting for the global message, due in an hour
            assertThat(client.statuses(launched.get("global"))).containsExactly(RunStatus.RUNNABLE);
            assertThat(client.events(launched.get("global"))).extracting(Event::type)
                    .containsExactly(EventType.EMITTED);
        }
    }

    @Test
    void a_periodic_step_runs_every_period_the_given_number_of_times_then_the_run_goes_on(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("periodic-count", Empty.class);
        List<String> ran = new java.util.concurrent.CopyOnWriteArrayList<>();
        List<Instant> ticks = new java.util.concurrent.CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "periodic-count-handler")
                .periodic("tick", Duration.ofMillis(300), 3, step -> {
                    ticks.add(step.startedAt());
                    ran.add("tick " + step.iteration());
                })
                .step("done", step -> ran.add("done"))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(NEVER).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ran).containsExactly("tick 1", "tick 2", "tick 3", "done");
            for (int i = 1; i < ticks.size(); i++) {
                assertThat(Duration.between(ticks.get(i - 1), ticks.get(i)))
                        .as("iteration %d started a period after iteration %d", i + 1, i)
                        .isGreaterThanOrEqualTo(Duration.ofMillis(300));
            }
        }
    }

    @Test
    void a_flow_step_repeats_after_a_delay_until_its_condition_holds(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("periodic-until", Empty.class);
        java.util.concurrent.atomic.AtomicInteger polls = new java.util.concurrent.atomic.AtomicInteger();
        Saga<Empty> saga = Saga.on(topic, "periodic-until-handler")
                .flowStep("poll", step -> polls.incrementAndGet() < 3
                        ? Flow.repeatAfter(Duration.ofMillis(200))
                        : Flow.next())
                .step("after", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(NEVER).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(polls.get()).isEqualTo(3);
            List<Event> events = engine.client().events(id);
            assertThat(events.stream().filter(e -> "poll".equals(e.step())).count()).isEqualTo(3);
        }
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Flow.repeatAfter(Duration.ofSeconds(-1)))
                .isInstanceOf(dev.coop.failure.CoopValidationException.class).hasMessageContaining("PT-1S");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Saga.on(topic, "x").periodic("p",
                Duration.ofSeconds(1), 0, step -> {
                })).isInstanceOf(dev.coop.failure.CoopValidationException.class).hasMessageContaining("was 0 times");
    }

    @Test
    void a_sleeping_run_survives_an_engine_restart(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("sleep-restart", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "sleep-restart-handler")
                .sleep("nap", Duration.ofMillis(1500))
                .step("after", step -> {
                })
                .build();
        MessageId id;
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(NEVER).register(saga).start()) {
            id = engine.client().launch(topic, new Empty());
            dev.coop.test.Await.until("the nap step committed", WAIT,
                    () -> engine.client().events(id).stream().anyMatch(e -> "nap".equals(e.step())));
        }
        try (CoopEngine restarted = Coop.engine(dataSource).pollInterval(NEVER).register(saga).start()) {
            assertThat(restarted.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = restarted.client().events(id);
            assertThat(Duration.between(step(events, "nap").startedAt(), step(events, "after").startedAt()))
                    .isGreaterThanOrEqualTo(Duration.ofMillis(1500));
        }
    }

    private static Event step(List<Event> events, String name) {
        return events.stream().filter(e -> e.type() == EventType.SUSPENDED && name.equals(e.step())).findFirst()
                .orElseThrow(() -> new AssertionError("no SUSPENDED " + name + " in " + events));
    }

    static Instant dbNow(CoopEngine engine) {
        return engine.client().now();
    }
}
