package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.failure.CoopValidationException;
import dev.coop.failure.Failure;
import dev.coop.failure.StepTimedOutException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A step's timeout: past it the attempt fails with {@link StepTimedOutException} (which the retry policy sees and the
 * run's failure names), the step's writes are rolled back, its connection refuses whatever its code does afterwards,
 * its thread is interrupted, and the worker goes on at once with other runs.
 */
class StepTimeoutTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Empty() {
    }

    @BeforeAll
    static void tables(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE timeout_written (what text NOT NULL)");
        }
    }

    @Test
    void a_step_past_its_timeout_is_rolled_back_its_connection_refused_and_the_worker_goes_on(DataSource dataSource)
            throws Exception {
        Topic<Empty> topic = Topic.of("timeout-stuck", Empty.class);
        Topic<Empty> other = Topic.of("timeout-other", Empty.class);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        AtomicReference<Throwable> lateUse = new AtomicReference<>();
        CountDownLatch lateTried = new CountDownLatch(1);
        Saga<Empty> stuck = Saga.on(topic, "timeout-stuck-saga")
                .step("stuck", step -> {
                    write(step.connection(), "before the timeout");
                    while (true) { // ignores interrupts: only the test's release ends it
                        try {
                            if (release.await(60, TimeUnit.SECONDS)) {
                                break;
                            }
                        } catch (InterruptedException e) {
                            interrupted.set(true);
                        }
                    }
                    try {
                        write(step.connection(), "after the timeout");
                    } catch (Throwable t) {
                        lateUse.set(t);
                    }
                    lateTried.countDown();
                })
                .timeout(Duration.ofMillis(300))
                .build();
        Saga<Empty> next = Saga.on(other, "timeout-other-saga").step("quick", step -> {
        }).build();

        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(stuck, next).start()) {
            try {
                MessageId id = engine.client().launch(topic, new Empty());
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
                // the one worker is not held by the stuck step: another run completes while it is still stuck
                MessageId after = engine.client().launch(other, new Empty());
                assertThat(engine.client().awaitCompletion(after, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(release.getCount()).as("the step is still stuck").isEqualTo(1);
                Await.until("the stuck step's thread to be interrupted", WAIT, interrupted::get);

                List<Event> events = engine.client().events(id);
                Event rolling = events.stream().filter(e -> e.type() == EventType.ROLLING_BACK).findFirst()
                        .orElseThrow();
                Failure failure = Failure.fromJson(rolling.exception());
                assertThat(failure.type()).isEqualTo(StepTimedOutException.TYPE);
                assertThat(failure.message()).contains("'stuck'", "300 ms");
                assertThat(count("before the timeout")).as("the step's write was rolled back").isZero();
            } finally {
                release.countDown();
            }
            assertThat(lateTried.await(20, TimeUnit.SECONDS)).isTrue();
            assertThat(lateUse.get()).as("the connection refuses the step's code after its timeout")
                    .isInstanceOf(IllegalStateException.class);
            assertThat(count("after the timeout")).isZero();
        }
    }

    @Test
    void the_retry_policy_sees_the_timeout_and_the_next_attempt_commits(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("timeout-retried", Empty.class);
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        CountDownLatch never = new CountDownLatch(1);
        Saga<Empty> saga = Saga.on(topic, "timeout-retried-saga")
                .stepTimeout(Duration.ofMillis(200))
                .step("slow once", step -> {
                    attempts.add(step.attempt());
                    if (step.attempt() == 1) {
                        never.await(); // honours the interrupt that follows its timeout
                    }
                })
                .retry(RetryPolicy.attempts(3).initialDelay(Duration.ofMillis(10))
                        .retryOn(StepTimedOutException.class))
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(attempts).containsExactly(1, 2);
            Event failed = engine.client().events(id).stream().filter(e -> e.type() == EventType.ATTEMPT_FAILED)
                    .findFirst().orElseThrow();
            assertThat(Failure.fromJson(failed.exception()).type()).isEqualTo(StepTimedOutException.TYPE);
        }
    }

    @Test
    void a_statement_running_past_the_timeout_is_cancelled(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("timeout-statement", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "timeout-statement-saga")
                .step("sleeps in the database", step -> {
                    write(step.connection(), "before the slow statement");
                    try (Statement st = step.connection().createStatement()) {
                        st.execute("SELECT pg_sleep(60)");
                    }
                })
                .timeout(Duration.ofMillis(300))
                .build();

        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            Event rolling = engine.client().events(id).stream().filter(e -> e.type() == EventType.ROLLING_BACK)
                    .findFirst().orElseThrow();
            assertThat(Failure.fromJson(rolling.exception()).type()).isEqualTo(StepTimedOutException.TYPE);
            assertThat(count("before the slow statement")).isZero();
        }
    }

    @Test
    void a_timeout_must_be_positive_and_name_its_option() {
        Topic<Empty> topic = Topic.of("timeout-invalid", Empty.class);
        assertThatThrownBy(() -> Saga.on(topic, "bad").step("a", step -> {
        }).timeout(Duration.ZERO)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("timeout of step 'a' of saga 'bad'").hasMessageContaining("PT0S");
        assertThatThrownBy(() -> Saga.on(topic, "bad").step("a", step -> {
        }).timeout(Duration.ofSeconds(-1))).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("timeout of step 'a'");
        assertThatThrownBy(() -> Saga.on(topic, "bad").stepTimeout(Duration.ofMillis(-5)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("stepTimeout of saga 'bad'");
        assertThatThrownBy(() -> Saga.on(topic, "bad").stepTimeout(null))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("stepTimeout of saga 'bad'");
        assertThatThrownBy(() -> Saga.on(topic, "bad").sleep("nap", Duration.ofSeconds(1))
                .timeout(Duration.ofSeconds(1))).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("sleep step");
        Saga<Empty> ok = Saga.on(topic, "ok").stepTimeout(Duration.ofSeconds(5)).step("a", step -> {
        }).step("b", step -> {
        }).timeout(Duration.ofMillis(1500)).build();
        assertThat(ok.timeoutOf("a")).contains(Duration.ofSeconds(5));
        assertThat(ok.timeoutOf("b")).contains(Duration.ofMillis(1500));
    }

    static void write(Connection c, String what) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO timeout_written (what) VALUES (?)")) {
            ps.setString(1, what);
            ps.executeUpdate();
        }
    }

    static int count(String what) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM timeout_written WHERE what = ?")) {
            ps.setString(1, what);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}
