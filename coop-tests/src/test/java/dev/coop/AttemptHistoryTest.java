package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.failure.Failure;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;
import dev.coop.render.JsonRenderer;
import dev.coop.render.RenderOptions;
import dev.coop.render.TextRenderer;
import dev.coop.test.CoopDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A step's failed attempts are events of the hierarchy, shown in the tree; a long series is bounded. */
class AttemptHistoryTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(60);

    /** A saga whose step "charge" fails until attempt {@code succeedsOn}, with a cause chain. */
    static Saga<Empty> flaky(Topic<Empty> topic, String name, int succeedsOn) {
        return Saga.on(topic, name)
                .step("charge", step -> {
                    if (step.attempt() < succeedsOn) {
                        throw new IllegalStateException("the gateway refused attempt " + step.attempt(),
                                new UncheckedIOException(new IOException("connection reset")));
                    }
                })
                .retry(RetryPolicy.attempts(succeedsOn).initialDelay(Duration.ZERO))
                .build();
    }

    @Test
    void a_step_retried_then_committed_shows_each_failed_attempt_with_its_cause_chain(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("attempts-few", Empty.class);
        try (CoopEngine engine = Coop.engine(dataSource).register(flaky(topic, "attempts-few-saga", 3)).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            List<Event> failed = engine.client().events(id).stream()
                    .filter(e -> e.type() == EventType.ATTEMPT_FAILED).toList();
            assertThat(failed).extracting(Event::attempt).containsExactly(1, 2);
            assertThat(failed).extracting(Event::step).containsOnly("charge");
            assertThat(failed).extracting(Event::engine).containsOnly(engine.id());
            Failure first = Failure.fromJson(failed.getFirst().exception());
            assertThat(first.message()).isEqualTo("the gateway refused attempt 1");
            assertThat(first.render()).contains("connection reset");

            RunView run = engine.client().tree(id).runs().getFirst();
            assertThat(run.steps()).extracting(StepView::kind).containsExactly(StepView.Kind.ATTEMPT_FAILED,
                    StepView.Kind.ATTEMPT_FAILED, StepView.Kind.STEP);
            assertThat(run.steps()).extracting(StepView::attempt).containsExactly(1, 2, 0);
            String text = new TextRenderer(RenderOptions.defaults()).render(run);
            assertThat(text).contains("✗ charge  attempt 1 failed, retried", "✗ charge  attempt 2 failed, retried",
                    "IllegalStateException: the gateway refused attempt 2", "✓ charge  step");
            JsonRenderer json = new JsonRenderer(false);
            assertThat(json.readRun(json.render(run))).isEqualTo(run);
            assertThat(new TextRenderer(RenderOptions.defaults()).renderEvents(engine.client().events(id)))
                    .contains("ATTEMPT_FAILED", "charge (attempt 2)");
        }
    }

    @Test
    void a_step_retried_many_times_keeps_its_first_attempts_and_the_latest_and_counts_the_rest(
            DataSource dataSource) throws Exception {
        int attempts = Integer.getInteger("coop.test.attempts", 200);
        watchRewrites(dataSource);
        Topic<Empty> topic = Topic.of("attempts-many", Empty.class);
        try (CoopEngine engine = Coop.engine(dataSource).register(flaky(topic, "attempts-many-saga", attempts))
                .start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT.multipliedBy(10))).isEqualTo(Outcome.COMMITTED);

            List<Event> failed = engine.client().events(id).stream()
                    .filter(e -> e.type() == EventType.ATTEMPT_FAILED).toList();
            assertThat(failed).extracting(Event::attempt).containsExactly(1, 2, 3, attempts - 1);
            assertThat(Failure.fromJson(failed.getLast().exception()).message())
                    .isEqualTo("the gateway refused attempt " + (attempts - 1));

            long started = System.nanoTime();
            RunView run = engine.client().tree(id).runs().getFirst();
            String text = new TextRenderer(RenderOptions.defaults()).render(run);
            System.out.printf("A step retried %d times: its tree read and rendered in %d ms, %d steps listed%n",
                    attempts, (System.nanoTime() - started) / 1_000_000, run.steps().size());
            assertThat(run.steps()).hasSize(5);
            assertThat(text).contains("attempt " + (attempts - 1) + " failed, retried (" + (attempts - 5)
                    + " earlier attempts counted, not kept)");
        }
        assertThat(rewrites(dataSource)).as("events rewritten in place: the log is append-only").isZero();
    }

    @Test
    void a_long_series_that_ends_parked_or_rolled_back_appends_its_last_retried_attempt(DataSource dataSource)
            throws Exception {
        watchRewrites(dataSource);
        Topic<Empty> parking = Topic.of("attempts-parking", Empty.class);
        Topic<Empty> failing = Topic.of("attempts-failing", Empty.class);
        Saga<Empty> parks = Saga.on(parking, "attempts-parking-saga").step("charge", step -> {
            throw new IllegalStateException("the gateway refused attempt " + step.attempt());
        }).retry(RetryPolicy.attempts(7).initialDelay(Duration.ZERO).parkWhenExhausted()).build();
        Saga<Empty> rollsBack = Saga.on(failing, "attempts-failing-saga").step("charge", step -> {
            throw new IllegalStateException("the gateway refused attempt " + step.attempt());
        }).retry(RetryPolicy.attempts(6).initialDelay(Duration.ZERO)).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(parks, rollsBack).start()) {
            MessageId failed = engine.client().launch(failing, new Empty());
            assertThat(engine.client().awaitCompletion(failed, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(engine.client().events(failed)).filteredOn(e -> e.type() == EventType.ATTEMPT_FAILED)
                    .extracting(Event::attempt).containsExactly(1, 2, 3, 5);

            MessageId parked = engine.client().launch(parking, new Empty());
            dev.coop.test.Await.until("parked", WAIT, () -> engine.client().countParked("attempts-parking-saga") == 1);
            List<Event> events = engine.client().events(parked).stream()
                    .filter(e -> e.type() == EventType.ATTEMPT_FAILED || e.type() == EventType.PARKED).toList();
            assertThat(events).extracting(Event::type).containsExactly(EventType.ATTEMPT_FAILED,
                    EventType.ATTEMPT_FAILED, EventType.ATTEMPT_FAILED, EventType.ATTEMPT_FAILED, EventType.PARKED);
            assertThat(events).extracting(Event::attempt).containsExactly(1, 2, 3, 6, 7);
            assertThat(Failure.fromJson(events.get(3).exception()).message())
                    .isEqualTo("the gateway refused attempt 6");
        }
        assertThat(rewrites(dataSource)).isZero();
    }

    static void watchRewrites(DataSource dataSource) throws Exception {
        Coop.client(dataSource); // the schema
        try (var c = dataSource.getConnection(); var s = c.createStatement()) {
            s.execute("""
                    CREATE TABLE IF NOT EXISTS public.event_rewrites (id bigint);
                    CREATE OR REPLACE FUNCTION public.log_event_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN INSERT INTO public.event_rewrites VALUES (OLD.id); RETURN NEW; END $$;
                    CREATE OR REPLACE TRIGGER log_event_rewrite BEFORE UPDATE ON coop.event
                      FOR EACH ROW EXECUTE FUNCTION public.log_event_rewrite();
                    """);
        }
    }

    static long rewrites(DataSource dataSource) throws Exception {
        try (var c = dataSource.getConnection();
                var s = c.createStatement();
                var rs = s.executeQuery("SELECT count(*) FROM public.event_rewrites")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
