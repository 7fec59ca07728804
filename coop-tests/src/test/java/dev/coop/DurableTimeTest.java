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
