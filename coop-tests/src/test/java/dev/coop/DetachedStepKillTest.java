package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Event;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * kill -9 of an engine while a step is detached from its round ({@code RoundSplit}): the round committed without the
 * step, whose run its own transaction holds locked; the engine process ({@link DetachedKillChild}) is killed with
 * SIGKILL. Its transaction dies with it, the run's hold lapses, another engine runs the step again, and its commit
 * happens once.
 */
class DetachedStepKillTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    /** The saga's name in both processes. */
    static final String SAGA = "detached-kill9";

    @BeforeAll
    static void tables(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE detached_kill_written (what text NOT NULL)");
        }
    }

    /** The saga both processes run: step "work" runs {@code then}, step "after" nothing. */
    static Saga<String> saga(StepBody<String> then) {
        return Saga.on(Topic.of(SAGA, String.class), SAGA)
                .step("work", then)
                .step("after", step -> {
                })
                .build();
    }

    @Test
    void an_engine_killed_while_a_step_is_detached_leaves_the_step_to_another_engine_which_commits_it_once(
            DataSource dataSource) throws Exception {
        Saga<String> survivorSaga = saga(step -> {
            try (PreparedStatement ps = step.connection().prepareStatement(
                    "INSERT INTO detached_kill_written (what) VALUES (?)")) {
                ps.setString(1, step.payload());
                ps.executeUpdate();
            }
        });
        CoopClient client = Coop.client(dataSource);
        Coop.engine(dataSource).workers(1).register(survivorSaga).start().close();
        MessageId detach = client.launch(survivorSaga.topic(), "detach"); // due first: the round's first step
        List<MessageId> others = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            others.add(client.launch(survivorSaga.topic(), "ok-" + i));
        }
        Process doomed = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(), "-cp",
                System.getProperty("java.class.path"), DetachedKillChild.class.getName(), db.jdbcUrl(),
                db.server().user(), db.server().password()).redirectErrorStream(true).start();
        try {
            StepRoundKillTest.Output output = new StepRoundKillTest.Output(doomed);
            String engine = output.await("ENGINE ");
            output.await("DETACHED");
            for (MessageId id : others) {
                assertThat(client.awaitCompletion(id, StepRoundTest.WAIT)).as("committed without the detached step")
                        .isEqualTo(Outcome.COMMITTED);
            }
            Await.until("the detached step's transaction holds its run", StepRoundTest.WAIT,
                    () -> locked(dataSource, detach));
            assertThat(client.statuses(detach)).containsExactly(RunStatus.RUNNABLE);

            doomed.destroyForcibly(); // SIGKILL
            assertThat(doomed.waitFor(StepRoundTest.WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            assertThat(doomed.exitValue()).as("killed by SIGKILL (128 + 9)").isEqualTo(137);

            try (CoopEngine survivor = Coop.engine(db.newDataSource(3)).name("survivor").workers(1)
                    .maxRunsPerTransaction(8).register(survivorSaga).start()) {
                assertThat(client.awaitCompletion(detach, StepRoundTest.WAIT)).isEqualTo(Outcome.COMMITTED);
                List<Event> events = client.events(detach);
                assertThat(StepRoundTest.workSteps(client, detach)).as("its step committed once").isEqualTo(1);
                assertThat(events).filteredOn(e -> "work".equals(e.step())).extracting(Event::engine)
                        .as("committed by the survivor, nothing by the killed engine")
                        .containsOnly(survivor.id()).doesNotContain(engine);
                assertThat(StepRoundTest.count(dataSource,
                        "SELECT count(*)::int FROM detached_kill_written WHERE what = ?", "detach"))
                        .as("its write is durable once").isEqualTo(1);
                Invariants.assertAll(events);
                for (MessageId id : others) {
                    assertThat(StepRoundTest.workSteps(client, id)).isEqualTo(1);
                    Invariants.assertAll(client.events(id));
                }
            }
        } finally {
            doomed.destroyForcibly();
        }
    }

    /** Whether another transaction holds the run of {@code message} locked (a lock that NOWAIT cannot take). */
    private static boolean locked(DataSource dataSource, MessageId message) {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT id FROM coop.run WHERE message_id = ? FOR UPDATE NOWAIT")) {
                ps.setObject(1, message.value());
                ps.executeQuery().close();
                return false;
            } catch (SQLException e) {
                if ("55P03".equals(e.getSQLState())) {
                    return true;
                }
                throw e;
            } finally {
                c.rollback();
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
