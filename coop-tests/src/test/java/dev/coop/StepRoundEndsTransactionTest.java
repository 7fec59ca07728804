package dev.coop;

import static dev.coop.StepRoundTest.client;
import static dev.coop.StepRoundTest.engine;
import static dev.coop.StepRoundTest.okAnd;
import static dev.coop.StepRoundTest.rows;
import static dev.coop.StepRoundTest.workSteps;
import static dev.coop.StepRoundTest.write;
import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A step that ends the transaction it shares with other runs' steps (a round, see {@link StepRoundTest}): by every
 * route the guard refuses, and through the driver's own connection, which the guard cannot see. The step fails alone
 * and never advances; every other step of the round commits once and whole. A run that Coop itself cannot process in
 * a round (its strategy fails) is parked as it would be alone, without its step running again.
 */
class StepRoundEndsTransactionTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(60);

    @BeforeAll
    static void tables(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE round_written (what text NOT NULL, pid int NOT NULL)");
        }
    }

    @Test
    void in_a_round_of_8_a_step_that_ends_the_transaction_by_any_route_fails_alone_and_the_others_commit_once(
            DataSource dataSource) throws Exception {
        Map<String, StepEndsTransactionTest.Route> routes = new LinkedHashMap<>(StepEndsTransactionTest.REFUSED);
        routes.putAll(StepEndsTransactionTest.UNSEEN);
        CoopClient client = client(dataSource);
        for (var route : routes.entrySet()) {
            String name = "round-ends-" + route.getKey();
            Saga<String> saga = Saga.on(Topic.of(name, String.class), name)
                    .step("work", step -> {
                        if (step.payload().equals("odd") && route.getKey().startsWith("rawFirst")) {
                            raw(step.connection()).commit(); // before the step's savepoint
                        }
                        write(step.connection(), name + ":" + step.payload());
                        if (step.payload().equals("odd")) {
                            route.getValue().end(step.connection());
                        }
                    })
                    .step("after", step -> {
                    })
                    .build();
            Map<String, MessageId> ids = StepRoundTest.launchBeforeStart(dataSource, client, saga, okAnd(4, "odd"));
            try (CoopEngine engine = engine(dataSource, new StepRoundTest.Rounds(), saga).start()) {
                assertThat(client.awaitCompletion(ids.get("odd"), WAIT)).as(name).isEqualTo(Outcome.ROLLED_BACK);
                assertThat(workSteps(client, ids.get("odd"))).as(name + ": never advanced").isZero();
                if (StepEndsTransactionTest.REFUSED.containsKey(route.getKey())) {
                    assertThat(rows(dataSource, name + ":odd")).as(name + ": nothing it wrote is durable").isZero();
                }
                for (var e : ids.entrySet()) {
                    if (!e.getKey().equals("odd")) {
                        assertThat(client.awaitCompletion(e.getValue(), WAIT)).as(name).isEqualTo(Outcome.COMMITTED);
                        assertThat(workSteps(client, e.getValue())).as(name + " " + e.getKey()).isEqualTo(1);
                        assertThat(rows(dataSource, name + ":" + e.getKey())).as(name + " " + e.getKey()).isEqualTo(1);
                    }
                }
            }
        }
    }

    @Test
    void a_step_that_commits_through_the_driver_after_steps_whose_advances_wait_commits_no_step_by_half(
            DataSource dataSource) throws Exception {
        String name = "round-raw-after-waiting";
        Saga<String> saga = Saga.on(Topic.of(name, String.class), name)
                .step("work", step -> {
                    if (step.payload().equals("odd")) { // the others never use their connection: their advances wait
                        raw(step.connection()).commit();
                    }
                })
                .step("after", step -> {
                })
                .build();
        CoopClient client = client(dataSource);
        Map<String, MessageId> ids = StepRoundTest.launchBeforeStart(dataSource, client, saga, okAnd(5, "odd"));
        StepRoundTest.Rounds rounds = new StepRoundTest.Rounds();
        try (CoopEngine engine = engine(dataSource, rounds, saga).start()) {
            assertThat(client.awaitCompletion(ids.get("odd"), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(workSteps(client, ids.get("odd"))).as("never advanced").isZero();
            for (var e : ids.entrySet()) {
                if (!e.getKey().equals("odd")) {
                    assertThat(client.awaitCompletion(e.getValue(), WAIT)).as(e.getKey())
                            .isEqualTo(Outcome.COMMITTED);
                    assertThat(workSteps(client, e.getValue())).as(e.getKey() + ": committed once").isEqualTo(1);
                    Invariants.assertAll(client.events(e.getValue()));
                }
            }
        }
    }

    @Test
    void in_a_round_of_8_a_run_that_coop_cannot_process_is_parked_without_its_step_running_again(
            DataSource dataSource) throws Exception {
        String name = "round-strategy-error";
        Topic<String> childTopic = Topic.of(name + "-child", String.class);
        Map<String, java.util.concurrent.atomic.AtomicInteger> bodies = new java.util.concurrent.ConcurrentHashMap<>();
        CooperationStrategy broken = new CooperationStrategy() {
            @Override
            public BarrierDecision resumeHappyPath(Barrier barrier) {
                throw new AssertionError("strategy bug");
            }
        };
        Saga<String> saga = Saga.on(Topic.of(name, String.class), name).strategy(broken)
                .step("work", step -> {
                    bodies.computeIfAbsent(step.payload(), k -> new java.util.concurrent.atomic.AtomicInteger())
                            .incrementAndGet();
                    write(step.connection(), name + ":" + step.payload());
                    if (step.payload().equals("odd")) { // the only step that emits: the strategy is asked, and fails
                        step.launch(childTopic, "never");
                    }
                })
                .step("after", step -> {
                })
                .build();
        Saga<String> child = Saga.on(childTopic, name + "-child").step("one", step -> {
        }).build();
        CoopClient client = client(dataSource);
        Map<String, MessageId> ids = StepRoundTest.launchBeforeStart(dataSource, client, saga, okAnd(2, "odd"));
        try (CoopEngine engine = engine(dataSource, new StepRoundTest.Rounds(), saga).register(child).start()) {
            dev.coop.test.Await.until("the odd run parked", WAIT, () -> client.statuses(ids.get("odd"))
                    .equals(java.util.List.of(RunStatus.PARKED)));
            assertThat(bodies.get("odd")).as("its step ran once").hasValue(1);
            assertThat(rows(dataSource, name + ":odd")).as("nothing it wrote is durable").isZero();
            assertThat(client.parkedRuns(50)).anySatisfy(p -> assertThat(p.failure().render()).contains(
                    "strategy bug"));
            for (var e : ids.entrySet()) {
                if (!e.getKey().equals("odd")) {
                    assertThat(client.awaitCompletion(e.getValue(), WAIT)).as(e.getKey())
                            .isEqualTo(Outcome.COMMITTED);
                    assertThat(workSteps(client, e.getValue())).as(e.getKey() + ": committed once").isEqualTo(1);
                    assertThat(rows(dataSource, name + ":" + e.getKey())).as(e.getKey()).isEqualTo(1);
                }
            }
        }
    }

    private static Connection raw(Connection c) throws SQLException {
        return (Connection) c.unwrap(org.postgresql.PGConnection.class);
    }
}
