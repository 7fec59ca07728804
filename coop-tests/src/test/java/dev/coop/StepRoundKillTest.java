package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Event;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import java.io.BufferedReader;
import java.io.IOException;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * kill -9 of an engine mid-round: the engine runs in a process of its own ({@link RoundKillChild}), executes three
 * steps of a round of 8 and holds in the fourth; the test kills the process with SIGKILL. Nothing of the round is
 * durable, and an engine started afterwards completes every run, each step once.
 */
class StepRoundKillTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    /** The saga's name in both processes. */
    static final String SAGA = "round-kill9";

    @BeforeAll
    static void tables(DataSource dataSource) throws SQLException {
        StepRoundTest.tables(dataSource);
    }

    /** The saga both processes run: its first step writes a row named after the payload, then runs {@code then}. */
    static Saga<String> saga(StepBody<String> then) {
        return StepRoundTest.saga(SAGA, then);
    }

    @Test
    void an_engine_killed_mid_round_leaves_nothing_of_the_round_durable_and_every_run_completes_once(
            DataSource dataSource) throws Exception {
        Saga<String> saga = saga(step -> {
        });
        CoopClient client = Coop.client(dataSource);
        Coop.engine(dataSource).workers(1).register(saga).start().close();
        Map<String, MessageId> ids = new LinkedHashMap<>(); // launched while no engine runs: one round of 8
        for (String payload : StepRoundTest.okAnd(3, "hold")) {
            ids.put(payload, client.launch(saga.topic(), payload));
        }
        Process doomed = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(), "-cp",
                System.getProperty("java.class.path"), RoundKillChild.class.getName(), db.jdbcUrl(),
                db.server().user(), db.server().password()).redirectErrorStream(true).start();
        try {
            Output output = new Output(doomed);
            String engine = output.await("ENGINE ");
            int pid = Integer.parseInt(output.await("HOLDING "));
            assertThat(output.all("RAN ")).as("three steps ran before it, on the round's connection")
                    .containsExactly("ok-0 " + pid, "ok-1 " + pid, "ok-2 " + pid);
            assertThat(written(dataSource, pid)).as("the round did not commit").isZero();

            doomed.destroyForcibly(); // SIGKILL
            assertThat(doomed.waitFor(StepRoundTest.WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            assertThat(doomed.exitValue()).as("killed by SIGKILL (128 + 9)").isEqualTo(137);

            try (CoopEngine survivor = Coop.engine(db.newDataSource(3)).workers(1).maxRunsPerTransaction(8)
                    .register(saga).start()) {
                for (var e : ids.entrySet()) {
                    assertThat(client.awaitCompletion(e.getValue(), StepRoundTest.WAIT)).as(e.getKey())
                            .isEqualTo(Outcome.COMMITTED);
                    assertThat(StepRoundTest.workSteps(client, e.getValue())).as(e.getKey() + ": committed once")
                            .isEqualTo(1);
                    assertThat(StepRoundTest.rows(dataSource, SAGA + ":" + e.getKey()))
                            .as(e.getKey() + ": its write is durable once").isEqualTo(1);
                    assertThat(client.events(e.getValue())).extracting(Event::engine)
                            .as("nothing committed by the killed engine").doesNotContain(engine);
                    Invariants.assertAll(client.events(e.getValue()));
                }
            }
            assertThat(written(dataSource, pid)).as("nothing of the killed round is durable").isZero();
        } finally {
            doomed.destroyForcibly();
        }
    }

    private static int written(DataSource dataSource, int pid) throws SQLException {
        return StepRoundTest.count(dataSource, "SELECT count(*)::int FROM round_written WHERE pid = ?", pid);
    }

    /** What the engine process printed, read by a thread of its own. */
    static final class Output {
        private final List<String> lines = new CopyOnWriteArrayList<>();

        Output(Process process) {
            Thread.ofPlatform().daemon().name("round-kill9-output").start(() -> {
                try (BufferedReader reader = process.inputReader()) {
                    for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                        lines.add(line);
                    }
                } catch (IOException e) {
                    lines.add("(reading the output failed: " + e + ")");
                }
            });
        }

        /** The rest of the first line starting with {@code prefix}, awaited. */
        String await(String prefix) {
            try {
                Await.until("the engine process printed '" + prefix.strip() + "'", StepRoundTest.WAIT,
                        () -> !all(prefix).isEmpty());
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; its output: " + lines, e);
            }
            return all(prefix).getFirst();
        }

        /** The rest of every line so far starting with {@code prefix}. */
        List<String> all(String prefix) {
            return lines.stream().filter(l -> l.startsWith(prefix)).map(l -> l.substring(prefix.length())).toList();
        }
    }
}
