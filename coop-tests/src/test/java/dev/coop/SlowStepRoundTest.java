package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import dev.coop.test.StepGate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A slow step does not hold up the runs claimed with it: once the round's budget is spent, a step that has not used
 * its connection leaves the round (which commits the steps that finished and lets the runs not started go to other
 * workers), goes on alone and commits once; and {@code workers(n)} runs n steps at once when n runs are due.
 */
class SlowStepRoundTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(10);

    @BeforeAll
    static void tables(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE slow_round_written (what text NOT NULL)");
        }
    }

    @Test
    void a_round_of_eight_whose_first_step_blocks_completes_the_other_seven_meanwhile(DataSource dataSource)
            throws SQLException {
        Topic<String> topic = Topic.of("slow-round", String.class);
        StepGate gate = new StepGate(Duration.ofSeconds(60));
        Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();
        Saga<String> saga = Saga.on(topic, "slow-round-saga")
                .step("work", step -> {
                    executions.computeIfAbsent(step.payload(), p -> new AtomicInteger()).incrementAndGet();
                    if (step.payload().equals("slow")) {
                        gate.pass();
                        write(step.connection(), "slow wrote after the gate"); // alone now, in its own transaction
                    }
                })
                .step("after", step -> {
                })
                .build();
        Coop.engine(dataSource).workers(1).register(saga).start().close(); // registers the saga
        CoopClient client = CoopClient.builder(dataSource).build();
        List<MessageId> others = new ArrayList<>();
        MessageId slow = client.launch(topic, "slow"); // due first: the first step of the round
        for (int i = 0; i < 7; i++) {
            others.add(client.launch(topic, "ok-" + i));
        }

        try (CoopEngine engine = Coop.engine(dataSource).workers(1).maxRunsPerTransaction(8)
                .pollInterval(Duration.ofMillis(100)).register(saga).start()) {
            try {
                gate.awaitArrivals(1, WAIT);
                for (MessageId id : others) {
                    assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                }
                assertThat(gate.isOpen()).isFalse();
                assertThat(gate.arrivals()).as("the slow step runs once, still blocked").isEqualTo(1);
                assertThat(client.statuses(slow)).containsExactly(RunStatus.RUNNABLE);
            } finally {
                gate.open();
            }
            assertThat(client.awaitCompletion(slow, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(count("slow wrote after the gate")).isEqualTo(1);
            assertThat(executions).hasSize(8).allSatisfy((payload, n) -> assertThat(n.get()).as(payload).isEqualTo(1));
        }
    }

    @Test
    void three_workers_run_three_due_steps_at_once(DataSource dataSource) {
        Topic<String> topic = Topic.of("slow-round-three", String.class);
        StepGate gate = new StepGate(Duration.ofSeconds(60));
        Saga<String> saga = Saga.on(topic, "slow-round-three-saga").step("hold", step -> gate.pass()).build();
        Coop.engine(dataSource).workers(1).register(saga).start().close();
        CoopClient client = CoopClient.builder(dataSource).build();
        List<MessageId> ids = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ids.add(client.launch(topic, "run-" + i));
        }

        try (CoopEngine engine = Coop.engine(dataSource).workers(3).maxRunsPerTransaction(8)
                .pollInterval(Duration.ofMillis(100)).register(saga).start()) {
            try {
                gate.awaitArrivals(3, WAIT); // all three inside their step at once
                assertThat(gate.arrivals()).isEqualTo(3);
            } finally {
                gate.open();
            }
            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
        }
    }

    static void write(Connection c, String what) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO slow_round_written (what) VALUES (?)")) {
            ps.setString(1, what);
            ps.executeUpdate();
        }
    }

    static int count(String what) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM slow_round_written WHERE what = ?")) {
            ps.setString(1, what);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}
