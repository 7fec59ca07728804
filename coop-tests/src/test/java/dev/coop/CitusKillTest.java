package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.CitusDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Three engines competing on one Citus database, one of them a process of its own ({@link CitusKillChild}) killed
 * with SIGKILL while it holds a step open on a worker and its other worker runs steps. The two engines left take
 * over the held run once the dead process's sessions end (the coordinator's backend, then its connection to the
 * worker, which releases the row lock), and every hierarchy commits: each step once in the log, no step before its
 * children finished ({@link Invariants}).
 */
class CitusKillTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(40);
    static final int HIERARCHIES = 24;
    static final int CHILDREN = 3;

    static final Topic<Empty> ROOT = Topic.of("citus-kill-root", Empty.class);
    static final Topic<Empty> CHILD = Topic.of("citus-kill-child", Empty.class);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource());
    }

    /** The sagas of every engine of the test, in both processes: {@code body} runs in each step. */
    static Saga<?>[] sagas(StepBody<Empty> body) {
        Saga<Empty> root = Saga.on(ROOT, "citus-kill-root")
                .step("fan-out", step -> {
                    body.run(step);
                    for (int i = 0; i < CHILDREN; i++) {
                        step.launch(CHILD, new Empty());
                    }
                })
                .step("fan-in", body)
                .build();
        Saga<Empty> child = Saga.on(CHILD, "citus-kill-child").step("one", body).step("two", body).build();
        return new Saga<?>[]{root, child};
    }

    @Test
    void an_engine_killed_mid_step_leaves_every_hierarchy_to_the_other_two_each_step_once() throws Exception {
        CoopClient client = Coop.client(db.dataSource());
        Process doomed = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(), "-cp",
                System.getProperty("java.class.path"), CitusKillChild.class.getName(), db.jdbcUrl(), "postgres", "")
                .redirectErrorStream(true).start();
        List<CoopEngine> engines = new ArrayList<>();
        try {
            StepRoundKillTest.Output output = new StepRoundKillTest.Output(doomed);
            String doomedEngine = output.await("ENGINE ");
            List<MessageId> launched = new ArrayList<>();
            for (int i = 0; i < HIERARCHIES; i++) {
                launched.add(client.launch(ROOT, new Empty()));
            }
            String heldRun = output.await("HOLDING "); // the only engine so far holds its first step
            Saga<?>[] sagas = sagas(step -> {
            });
            for (int i = 0; i < 2; i++) {
                engines.add(CitusHappyPathTest.engine(db.newDataSource(6)).name("survivor-" + i).workers(3)
                        .register(sagas).start());
            }
            int ranBefore = output.all("RAN ").size();
            dev.coop.test.Await.until("the doomed engine runs steps next to the others", WAIT,
                    () -> output.all("RAN ").size() >= ranBefore + 3);

            doomed.destroyForcibly(); // SIGKILL
            assertThat(doomed.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            assertThat(doomed.exitValue()).as("killed by SIGKILL (128 + 9)").isEqualTo(137);

            for (MessageId id : launched) {
                assertThat(client.awaitCompletion(id, WAIT)).as("hierarchy %s", id).isEqualTo(Outcome.COMMITTED);
            }
            List<Event> events = CoopTables.of(db.dataSource()).allEvents();
            Invariants.assertAll(events);
            int runs = HIERARCHIES * (1 + CHILDREN);
            assertThat(events).filteredOn(e -> e.type() == EventType.COMMITTED).hasSize(runs);
            Map<String, Long> stepsOfRuns = events.stream().filter(e -> e.type() == EventType.SUSPENDED)
                    .collect(Collectors.groupingBy(e -> e.lineage().last() + " " + e.step(), Collectors.counting()));
            assertThat(stepsOfRuns).as("each step of each run committed once").hasSize(2 * runs)
                    .allSatisfy((step, n) -> assertThat(n).as(step).isEqualTo(1));
            assertThat(events).filteredOn(e -> e.lineage().last().toString().equals(heldRun)
                    && e.type() == EventType.SUSPENDED).as(EventLog.table(events))
                    .extracting(Event::engine).doesNotContain(doomedEngine).isNotEmpty();
            assertThat(events).filteredOn(e -> doomedEngine.equals(e.engine()))
                    .as("the killed engine committed steps before it died").isNotEmpty();
        } finally {
            doomed.destroyForcibly();
            engines.forEach(CoopEngine::close);
        }
    }
}
