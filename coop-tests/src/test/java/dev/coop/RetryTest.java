package dev.coop;

import dev.coop.failure.Failure;
import dev.coop.inspect.Event;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Retries of a step's own failures: attempts visible to the step, backoff waited durably in the run table, rollback
 * when exhausted, and which failures are transient.
 */
class RetryTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Case(String name) {
    }

    @Test
    void a_step_retried_with_backoff_succeeds_on_its_third_attempt(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("retry-backoff", Empty.class);
        Topic<Empty> childTopic = Topic.of("retry-backoff-child", Empty.class);
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        List<Long> startedAt = new CopyOnWriteArrayList<>();
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "retry-backoff-saga")
                .step("s0", step -> ran.add("s0 attempt " + step.attempt()))
                .step("flaky", step -> {
                    startedAt.add(System.nanoTime());
                    attempts.add(step.attempt());
                    step.launch(childTopic, new Empty()); // only the successful attempt's launch escapes
                    if (step.attempt() < 3) {
                        throw new IOException("transient trouble on attempt " + step.attempt());
                    }
                })
                .retry(RetryPolicy.attempts(5).initialDelay(Duration.ofMillis(20)).multiplier(2)
                        .maxDelay(Duration.ofSeconds(1)))
                .step("s2", step -> ran.add("s2 attempt " + step.attempt()))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "retry-backoff-child-saga").step("c0", step -> {
        }).build();

        try (CoopEngine engine = Coop.engine(dataSource).register(saga, child).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = engine.client().events(id);
            String log = EventLog.table(events);

            assertThat(attempts).as(log).containsExactly(1, 2, 3);
            assertThat(ran).containsExactly("s0 attempt 1", "s2 attempt 1");
            assertThat(millisBetween(startedAt.get(0), startedAt.get(1))).as("first wait").isGreaterThanOrEqualTo(20);
            assertThat(millisBetween(startedAt.get(1), startedAt.get(2))).as("second wait, doubled")
                    .isGreaterThanOrEqualTo(40);
            assertThat(EventLog.rows(events)).as(log).containsExactly(
                    "EMITTED - -",
                    "SEEN retry-backoff-saga -",
                    "SUSPENDED retry-backoff-saga s0",
                    "ATTEMPT_FAILED retry-backoff-saga flaky",
                    "ATTEMPT_FAILED retry-backoff-saga flaky",
                    "EMITTED retry-backoff-saga flaky",
                    "SUSPENDED retry-backoff-saga flaky",
                    "SEEN retry-backoff-child-saga -",
                    "SUSPENDED retry-backoff-child-saga c0",
                    "COMMITTED retry-backoff-child-saga c0",
                    "SUSPENDED retry-backoff-saga s2",
                    "COMMITTED retry-backoff-saga s2");
        }
    }

    @Test
    void a_retry_waits_in_the_run_table_and_survives_an_engine_restart(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("retry-durable", Empty.class);
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "retry-durable-saga")
                .step("flaky", step -> {
                    attempts.add(step.attempt());
                    if (step.attempt() == 1) {
                        throw new IOException("first attempt fails");
                    }
                })
                .retry(RetryPolicy.attempts(2).initialDelay(Duration.ofMillis(600)))
                .build();

        MessageId id;
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            id = engine.client().launch(topic, new Empty());
            Map<String, Object> run = Await.value("the run to wait for its second attempt", WAIT, () -> {
                Map<String, Object> r = run(dataSource, id);
                return Integer.valueOf(2).equals(r.get("attempt")) ? r : null;
            });
            assertThat(run.get("status")).isEqualTo("RUNNABLE");
            assertThat(run.get("due_in_future")).as("runnable_at is in the future: %s", run).isEqualTo(true);
            assertThat((String) run.get("failure")).contains("first attempt fails");
            assertThat(attempts).containsExactly(1);
        }
        // no engine runs now; the schedule lives in the database
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        assertThat(attempts).containsExactly(1, 2);
    }

    @Test
    void when_retries_are_exhausted_the_run_rolls_back_with_the_last_failure(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("retry-exhausted", Empty.class);
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        List<String> compensations = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "retry-exhausted-saga")
                .step("s0", step -> {
                })
                .compensateWith((step, cause) -> compensations.add("s0 because " + cause.reason()))
                .step("doomed", step -> {
                    attempts.add(step.attempt());
                    throw new IOException("attempt " + step.attempt() + " fails");
                })
                .compensateWith((step, cause) -> compensations.add("doomed (must not run)"))
                .retry(RetryPolicy.attempts(3).initialDelay(Duration.ofMillis(10)))
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = engine.client().events(id);
            String log = EventLog.table(events);
            assertThat(attempts).as(log).containsExactly(1, 2, 3);
            assertThat(compensations).containsExactly("s0 because attempt 3 fails");
            assertThat(EventLog.rows(events)).as(log).containsExactly(
                    "EMITTED - -",
                    "SEEN retry-exhausted-saga -",
                    "SUSPENDED retry-exhausted-saga s0",
                    "ATTEMPT_FAILED retry-exhausted-saga doomed",
                    "ATTEMPT_FAILED retry-exhausted-saga doomed",
                    "ROLLING_BACK retry-exhausted-saga doomed",
                    "SUSPENDED retry-exhausted-saga Rollback of s0 (rolling back child scopes)",
                    "SUSPENDED retry-exhausted-saga Rollback of s0",
                    "ROLLED_BACK retry-exhausted-saga Rollback of s0");
            Failure f = Failure.fromJson(events.get(5).exception());
            assertThat(f.type()).isEqualTo("java.io.IOException");
            assertThat(f.message()).isEqualTo("attempt 3 fails");
            assertThat(events.subList(3, 5)).extracting(Event::attempt).containsExactly(1, 2);
            assertThat(events.subList(3, 5)).extracting(e -> Failure.fromJson(e.exception()).message())
                    .containsExactly("attempt 1 fails", "attempt 2 fails");
        }
    }

    @Test
    void retry_on_and_abort_on_decide_which_failures_are_retried(DataSource dataSource) {
        Topic<Case> topic = Topic.of("retry-classify", Case.class);
        Map<String, List<Integer>> attempts = new ConcurrentHashMap<>();
        Saga<Case> saga = Saga.on(topic, "retry-classify-saga")
                .step("classified", step -> {
                    String name = step.payload().name();
                    attempts.computeIfAbsent(name, n -> new CopyOnWriteArrayList<>()).add(step.attempt());
                    if (step.attempt() > 1) {
                        return; // a retried case succeeds on its second attempt
                    }
                    switch (name) {
                        case "io" -> throw new IOException("transient");
                        case "wrapped-io" -> throw new IllegalStateException("wrapper", new IOException("inside"));
                        case "not-listed" -> throw new IllegalArgumentException("permanent: not in retryOn");
                        case "aborted" -> throw new FileNotFoundException("permanent: in abortOn");
                        default -> throw new AssertionError(name);
                    }
                })
                .retry(RetryPolicy.attempts(3).initialDelay(Duration.ofMillis(10)).retryOn(IOException.class)
                        .abortOn(FileNotFoundException.class))
                .build();

        Map<String, Outcome> outcomes = new HashMap<>();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            Map<String, MessageId> ids = new HashMap<>();
            for (String name : List.of("io", "wrapped-io", "not-listed", "aborted")) {
                ids.put(name, engine.client().launch(topic, new Case(name)));
            }
            ids.forEach((name, id) -> outcomes.put(name, engine.client().awaitCompletion(id, WAIT)));
        }
        assertThat(outcomes).containsEntry("io", Outcome.COMMITTED).containsEntry("wrapped-io", Outcome.COMMITTED)
                .containsEntry("not-listed", Outcome.ROLLED_BACK).containsEntry("aborted", Outcome.ROLLED_BACK);
        assertThat(attempts).containsEntry("io", List.of(1, 2)).containsEntry("wrapped-io", List.of(1, 2))
                .containsEntry("not-listed", List.of(1)).containsEntry("aborted", List.of(1));
    }

    @Test
    void the_attempt_number_starts_again_at_one_for_the_next_step(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("retry-next-step", Empty.class);
        List<String> seen = new CopyOnWriteArrayList<>();
        Saga<Empty> saga = Saga.on(topic, "retry-next-step-saga")
                .step("s0", step -> {
                    seen.add("s0 attempt " + step.attempt());
                    if (step.attempt() == 1) {
                        throw new IOException("once");
                    }
                })
                .retry(RetryPolicy.attempts(2).initialDelay(Duration.ZERO))
                .step("s1", step -> seen.add("s1 attempt " + step.attempt()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        assertThat(seen).containsExactly("s0 attempt 1", "s0 attempt 2", "s1 attempt 1");
    }

    @Test
    void a_failing_step_runs_once_per_attempt_even_when_many_workers_compete(DataSource dataSource) {
        Topic<Empty> once = Topic.of("retry-once", Empty.class);
        Topic<Empty> twice = Topic.of("retry-twice", Empty.class);
        Map<UUID, List<Integer>> executions = new ConcurrentHashMap<>();
        Saga<Empty> noPolicy = Saga.on(once, "retry-once-saga")
                .step("fails", step -> {
                    executions.computeIfAbsent(step.runId(), r -> new CopyOnWriteArrayList<>()).add(step.attempt());
                    throw new IllegalStateException("always");
                })
                .build();
        Saga<Empty> twoAttempts = Saga.on(twice, "retry-twice-saga")
                .step("fails", step -> {
                    executions.computeIfAbsent(step.runId(), r -> new CopyOnWriteArrayList<>()).add(step.attempt());
                    throw new IllegalStateException("always");
                })
                .retry(RetryPolicy.attempts(2).initialDelay(Duration.ZERO))
                .build();

        int runs = 60;
        try (CoopEngine engine = Coop.engine(dataSource).register(noPolicy, twoAttempts).start()) {
            List<MessageId> ids = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                ids.add(engine.client().launch(once, new Empty()));
                ids.add(engine.client().launch(twice, new Empty()));
            }
            for (MessageId id : ids) {
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            }
        }
        Map<UUID, List<Integer>> wrong = new HashMap<>();
        executions.forEach((run, list) -> {
            if (!list.equals(List.of(1)) && !list.equals(List.of(1, 2))) {
                wrong.put(run, list);
            }
        });
        assertThat(executions).hasSize(2 * runs);
        assertThat(wrong).as("runs whose failing step ran more often than its attempts (attempt numbers seen)")
                .isEmpty();
    }

    // --- helpers

    static long millisBetween(long fromNanos, long toNanos) {
        return (toNanos - fromNanos) / 1_000_000;
    }

    static Map<String, Object> run(DataSource dataSource, MessageId id) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT status, attempt, runnable_at > clock_timestamp(),"
                        + " failure::text FROM coop.run WHERE message_id = ?")) {
            ps.setObject(1, id.value());
            try (ResultSet rs = ps.executeQuery()) {
                Map<String, Object> row = new HashMap<>();
                if (rs.next()) {
                    row.put("status", rs.getString(1));
                    row.put("attempt", rs.getInt(2));
                    row.put("due_in_future", rs.getBoolean(3));
                    row.put("failure", rs.getString(4));
                }
                return row;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
