package dev.coop;

import dev.coop.failure.Failure;
import dev.coop.failure.GaveUpException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.ParkedRun;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Parking: a step whose retries are exhausted under a parking policy stops for an operator, who lists it and resolves it
 * through the client: retry now, mark the step done, or cancel (with compensation).
 */
class ParkingTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    static final RetryPolicy PARK_AFTER_TWO = RetryPolicy.attempts(2).initialDelay(Duration.ofMillis(10))
            .parkWhenExhausted();

    /** A saga s0 (compensated) → flaky (parks while broken) → s2. */
    static final class Flaky {
        final AtomicBoolean broken = new AtomicBoolean(true);
        final List<Integer> attempts = new CopyOnWriteArrayList<>();
        final List<String> ran = new CopyOnWriteArrayList<>();
        final Topic<Empty> topic;
        final Saga<Empty> saga;

        Flaky(String name) {
            topic = Topic.of(name, Empty.class);
            saga = Saga.on(topic, name + "-saga")
                    .step("s0", step -> {
                    })
                    .compensateWith((step, cause) -> ran.add("compensated s0 because "
                            + cause.getClass().getSimpleName()))
                    .step("flaky", step -> {
                        attempts.add(step.attempt());
                        if (broken.get()) {
                            throw new IOException("still broken (attempt " + step.attempt() + ")");
                        }
                        ran.add("flaky succeeded on attempt " + step.attempt());
                    })
                    .compensateWith((step, cause) -> ran.add("compensated flaky"))
                    .retry(PARK_AFTER_TWO)
                    .step("s2", step -> ran.add("s2"))
                    .build();
        }
    }

    static ParkedRun awaitParked(CoopClient client, String saga) {
        return Await.value("a parked run of " + saga, WAIT, () -> client.parkedRuns(1000).stream()
                .filter(p -> p.saga().equals(saga)).findFirst().orElse(null));
    }

    @Test
    void a_parked_run_is_listed_with_its_failure_and_retry_now_runs_its_step_again_from_attempt_one(
            DataSource dataSource) {
        Flaky flaky = new Flaky("park-retry");
        try (CoopEngine engine = Coop.engine(dataSource).register(flaky.saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(flaky.topic, new Empty());
            ParkedRun parked = awaitParked(client, "park-retry-saga");

            assertThat(parked.messageId()).isEqualTo(id);
            assertThat(parked.lineage().root()).isEqualTo(id.value());
            assertThat(parked.lineage().last()).isEqualTo(parked.runId());
            assertThat(parked.stepIndex()).isEqualTo(1);
            assertThat(parked.step()).isEqualTo("flaky");
            assertThat(new dev.coop.render.TextRenderer(dev.coop.render.RenderOptions.defaults())
                    .renderParked(List.of(parked))).contains("park-retry-saga  flaky  2");
            assertThat(parked.attempt()).isEqualTo(2);
            assertThat(parked.failure().type()).isEqualTo("java.io.IOException");
            assertThat(parked.failure().message()).isEqualTo("still broken (attempt 2)");
            assertThat(parked.failure().source()).startsWith("park-retry-saga[");
            assertThat(parked.createdAt()).isNotNull();
            assertThat(client.statuses(id)).containsExactly(RunStatus.PARKED);
            assertThat(flaky.attempts).containsExactly(1, 2);

            flaky.broken.set(false);
            assertThat(client.retryNow(parked.runId())).isTrue();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            String log = EventLog.table(client.events(id));
            assertThat(flaky.attempts).as(log).containsExactly(1, 2, 1);
            assertThat(flaky.ran).as(log).containsExactly("flaky succeeded on attempt 1", "s2");
            assertThat(client.parkedRuns(1000)).noneMatch(p -> p.runId().equals(parked.runId()));
            assertThat(client.retryNow(parked.runId())).as("no longer parked").isFalse();
            assertThat(EventLog.rows(client.events(id))).as(log).containsExactly(
                    "EMITTED - -",
                    "SEEN park-retry-saga -",
                    "SUSPENDED park-retry-saga s0",
                    "ATTEMPT_FAILED park-retry-saga flaky",
                    "PARKED park-retry-saga flaky",
                    "RETRIED park-retry-saga flaky",
                    "SUSPENDED park-retry-saga flaky",
                    "SUSPENDED park-retry-saga s2",
                    "COMMITTED park-retry-saga s2");
        }
    }

    @Test
    void a_parked_step_marked_done_is_not_run_again_and_the_run_goes_on(DataSource dataSource) {
        Flaky flaky = new Flaky("park-skip");
        try (CoopEngine engine = Coop.engine(dataSource).register(flaky.saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(flaky.topic, new Empty());
            ParkedRun parked = awaitParked(client, "park-skip-saga");

            assertThat(client.markStepDone(parked.runId())).isTrue();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            String log = EventLog.table(client.events(id));
            assertThat(flaky.attempts).as(log).containsExactly(1, 2);
            assertThat(flaky.ran).as(log).containsExactly("s2");
            assertThat(EventLog.rows(client.events(id))).as(log).containsSubsequence(
                    "SUSPENDED park-skip-saga s0",
                    "ATTEMPT_FAILED park-skip-saga flaky",
                    "PARKED park-skip-saga flaky",
                    "MARKED_DONE park-skip-saga flaky",
                    "SUSPENDED park-skip-saga flaky",
                    "SUSPENDED park-skip-saga s2",
                    "COMMITTED park-skip-saga s2");
            assertThat(client.markStepDone(parked.runId())).isFalse();
        }
    }

    @Test
    void cancelling_a_parked_run_rolls_it_back_with_compensation_and_its_parent_follows(DataSource dataSource) {
        Flaky flaky = new Flaky("park-cancel");
        Topic<Empty> rootTopic = Topic.of("park-cancel-root", Empty.class);
        List<String> rootRan = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "park-cancel-root-saga")
                .step("r0", step -> step.launch(flaky.topic, new Empty()))
                .compensateWith((step, cause) -> rootRan.add("compensated r0 because " + cause.reason()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, flaky.saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Empty());
            ParkedRun parked = awaitParked(client, "park-cancel-saga");
            assertThat(parked.lineage().depth()).isEqualTo(3);

            assertThat(client.cancel(parked.lineage(), "the operator gives up")).isEqualTo(CancelResult.REQUESTED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            String log = EventLog.table(events);
            assertThat(flaky.attempts).as(log).containsExactly(1, 2);
            assertThat(flaky.ran).as(log).containsExactly("compensated s0 because GaveUpException");
            assertThat(rootRan).as(log).hasSize(1);
            assertThat(client.statuses(parked.messageId())).containsExactly(RunStatus.ROLLED_BACK);
            Event gaveUp = CompensationTest.find(events, e -> e.type() == EventType.ROLLING_BACK
                    && "park-cancel-saga".equals(e.saga()));
            assertThat(gaveUp.step()).as("a run gives up between steps: no step failed").isNull();
            CancellationTest.assertGaveUpBecauseCancelled(Failure.fromJson(gaveUp.exception()), "park-cancel-saga");
            assertThat(client.parkedRuns(1000)).noneMatch(p -> p.runId().equals(parked.runId()));
        }
    }

    @Test
    void operator_requests_for_runs_that_are_not_parked_change_nothing(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        assertThat(client.retryNow(UUID.randomUUID())).isFalse();
        assertThat(client.markStepDone(UUID.randomUUID())).isFalse();
        Topic<Empty> topic = Topic.of("park-none", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "park-none-saga").step("s0", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            UUID run = engine.client().events(id).stream().filter(e -> e.type() == EventType.SEEN).findFirst()
                    .orElseThrow().lineage().last();
            assertThat(client.retryNow(run)).isFalse();
            assertThat(client.markStepDone(run)).isFalse();
            assertThat(engine.client().statuses(id)).containsExactly(RunStatus.COMMITTED);
        }
    }
}
