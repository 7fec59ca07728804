package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Event;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A round's slow step that left its round ({@code RoundSplit}): when another transaction moved its run on before the
 * step locked it again, nothing of the step commits and its connection refuses use; and a step detached for longer
 * than the run's hold keeps its run, which its own transaction holds locked, from every other engine's claim.
 */
class DetachedStepTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @BeforeAll
    static void tables(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE detached_written (what text NOT NULL)");
        }
    }

    @Test
    void a_detached_step_whose_run_moved_on_commits_nothing_and_its_connection_refuses_use(DataSource dataSource)
            throws Exception {
        Topic<String> topic = Topic.of("detached-lost", String.class);
        StepGate gate = new StepGate(Duration.ofSeconds(60));
        AtomicInteger executions = new AtomicInteger();
        AtomicReference<Object> firstUse = new AtomicReference<>();
        AtomicBoolean interrupted = new AtomicBoolean();
        Saga<String> saga = Saga.on(topic, "detached-lost-saga")
                .step("work", step -> {
                    if (!step.payload().equals("slow")) {
                        return;
                    }
                    if (executions.incrementAndGet() > 1) {
                        write(step.connection(), "slow, again");
                        return;
                    }
                    try {
                        gate.pass(); // left its round meanwhile; the test moves its run on before the reclaim
                    } catch (InterruptedException e) {
                        interrupted.set(true); // its outcome is not wanted
                    }
                    try {
                        write(step.connection(), "slow, first");
                        firstUse.set("wrote");
                    } catch (RuntimeException | SQLException e) {
                        firstUse.set(e);
                    }
                })
                .step("after", step -> {
                })
                .build();
        Coop.engine(dataSource).workers(1).register(saga).start().close();
        CoopClient client = CoopClient.builder(dataSource).build();
        MessageId slow = client.launch(topic, "slow"); // due first: the round's first step
        List<MessageId> others = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            others.add(client.launch(topic, "ok-" + i));
        }
        AtomicBoolean moved = new AtomicBoolean();
        EngineListener mover = new EngineListener() {
            @Override
            public void roundCommitted(String sagaName, int claimed, int executed) {
                // the round committed without the slow step, which has not locked its run again yet: another
                // transaction moves the run on (as an operator's action would)
                if (gate.arrivals() == 1 && !moved.get()) {
                    bumpVersion(dataSource, slow);
                    moved.set(true);
                }
            }
        };
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).maxRunsPerTransaction(8)
                .pollInterval(Duration.ofMillis(100)).listener(mover).register(saga).start()) {
            gate.awaitArrivals(1, WAIT);
            for (MessageId id : others) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            Object used = Await.value("the first execution's use of its connection", WAIT, firstUse::get);
            assertThat(moved).as("the run was moved on between the round's commit and the reclaim").isTrue();
            assertThat(interrupted).as("its thread was interrupted").isTrue();
            assertThat(used).as("its connection refuses use").isInstanceOf(Exception.class);

            assertThat(client.awaitCompletion(slow, WAIT)).as("run again once the hold lapsed")
                    .isEqualTo(Outcome.COMMITTED);
            assertThat(executions).hasValue(2);
            assertThat(rows(dataSource, "slow, first")).as("nothing of the lost step commits").isZero();
            assertThat(rows(dataSource, "slow, again")).isEqualTo(1);
            assertThat(StepRoundTest.workSteps(client, slow)).as("its step committed once").isEqualTo(1);
            Invariants.assertAll(client.events(slow));
        } finally {
            gate.open();
        }
    }

    @Test
    void a_step_detached_past_its_hold_is_not_run_by_another_engine_while_it_runs(DataSource dataSource)
            throws Exception {
        Topic<String> topic = Topic.of("detached-long", String.class);
        StepGate gate = new StepGate(Duration.ofSeconds(60));
        AtomicInteger executions = new AtomicInteger();
        Saga<String> saga = Saga.on(topic, "detached-long-saga")
                .step("work", step -> {
                    if (step.payload().equals("slow")) {
                        executions.incrementAndGet();
                        gate.pass();
                        write(step.connection(), "long slow");
                    }
                })
                .step("after", step -> {
                })
                .build();
        Coop.engine(dataSource).workers(1).register(saga).start().close();
        CoopClient client = CoopClient.builder(dataSource).build();
        MessageId slow = client.launch(topic, "slow");
        List<MessageId> others = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            others.add(client.launch(topic, "ok-" + i));
        }
        try (CoopEngine first = Coop.engine(dataSource).name("first").workers(1).maxRunsPerTransaction(8)
                .pollInterval(Duration.ofMillis(100)).register(saga).start()) {
            try {
                gate.awaitArrivals(1, WAIT);
                for (MessageId id : others) {
                    assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                }
                Await.until("the slow run's hold lapsed", WAIT, () -> holdLapsed(dataSource, slow));
                try (CoopEngine second = Coop.engine(dataSource).name("second").workers(1)
                        .pollInterval(Duration.ofMillis(100)).register(saga).start()) {
                    // a run due after the slow one: a claim that could take the slow run would take it first
                    MessageId late = client.launch(topic, "late");
                    assertThat(client.awaitCompletion(late, WAIT)).isEqualTo(Outcome.COMMITTED);
                    MessageId later = client.launch(topic, "later");
                    assertThat(client.awaitCompletion(later, WAIT)).isEqualTo(Outcome.COMMITTED);
                    assertThat(executions).as("the detached step still runs, once").hasValue(1);
                    assertThat(client.statuses(slow)).containsExactly(RunStatus.RUNNABLE);
                    gate.open();
                    assertThat(client.awaitCompletion(slow, WAIT)).isEqualTo(Outcome.COMMITTED);
                }
            } finally {
                gate.open();
            }
            assertThat(executions).hasValue(1);
            assertThat(rows(dataSource, "long slow")).isEqualTo(1);
            assertThat(StepRoundTest.workSteps(client, slow)).isEqualTo(1);
            List<Event> events = client.events(slow);
            assertThat(events).filteredOn(e -> "work".equals(e.step())).extracting(Event::engine)
                    .as("committed by the engine it ran on").containsOnly(first.id());
            Invariants.assertAll(events);
        }
    }

    static void write(Connection c, String what) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO detached_written (what) VALUES (?)")) {
            ps.setString(1, what);
            ps.executeUpdate();
        }
    }

    static int rows(DataSource dataSource, String what) throws SQLException {
        return StepRoundTest.count(dataSource, "SELECT count(*)::int FROM detached_written WHERE what = ?", what);
    }

    /** Whether the run's hold ({@code reserved_until}) was set and passed. */
    static boolean holdLapsed(DataSource dataSource, MessageId message) {
        try {
            return StepRoundTest.count(dataSource, "SELECT count(*)::int FROM coop.run WHERE message_id = ?"
                    + " AND reserved_until IS NOT NULL AND reserved_until < clock_timestamp()", message.value()) == 1;
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void bumpVersion(DataSource dataSource, MessageId message) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "UPDATE coop.run SET version = version + 1 WHERE message_id = ?")) {
            ps.setObject(1, message.value());
            assertThat(ps.executeUpdate()).isEqualTo(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
