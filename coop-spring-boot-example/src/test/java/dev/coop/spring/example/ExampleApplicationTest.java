package dev.coop.spring.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.CoopClient;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.Saga;
import dev.coop.Topic;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.MDC;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import dev.coop.inspect.Outcome;
import dev.coop.spring.CoopEndpoint;
import dev.coop.spring.CoopEngineLifecycle;
import dev.coop.spring.CoopHealthIndicator;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import dev.coop.test.CoopPostgres;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The example application against the embedded PostgreSQL: only the starter, Saga beans and Spring's JDBC. */
@SpringBootTest(properties = {"payments.limit-cents=50000", "coop.engine.poll-interval=200ms"})
class ExampleApplicationTest {
    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        CoopPostgres server = CoopPostgres.shared();
        String database = server.createDatabase("spring_example");
        registry.add("spring.datasource.url", () -> server.jdbcUrl(database));
        registry.add("spring.datasource.username", server::user);
        registry.add("spring.datasource.password", server::password);
    }

    @Autowired
    OrderService orders;
    @Autowired
    CoopClient coop;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    DataSource dataSource;
    @Autowired
    CoopEngineLifecycle engine;
    @Autowired
    CoopHealthIndicator health;
    @Autowired
    CoopEndpoint endpoint;
    @Autowired
    MeterRegistry meters;

    @Test
    void anOrderRunsItsHierarchyWithJdbcWritesInsideSteps() {
        assertThat(dataSource).isInstanceOf(HikariDataSource.class); // the pool Spring Boot builds, accepted
        assertThat(engine.engine()).isPresent();
        String id = "o-" + UUID.randomUUID();
        MessageId message = orders.place(new Topics.Order(id, "book", 1_500));

        assertThat(coop.awaitCompletion(message, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
        assertThat(jdbc.queryForObject("SELECT status FROM orders WHERE id = ?", String.class, id))
                .isEqualTo("CONFIRMED");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM payments WHERE order_id = ?", Long.class, id))
                .isEqualTo(1L);
        assertThat(coop.tree(message).toString()).contains("order").contains("payment");
    }

    @Test
    void theCallersRollbackLaunchesNothing() {
        String id = "o-" + UUID.randomUUID();
        long messagesBefore = messages();
        assertThatThrownBy(() -> orders.placeThenFail(new Topics.Order(id, "lamp", 2_000)))
                .isInstanceOf(IllegalStateException.class);

        assertThat(jdbc.queryForObject("SELECT count(*) FROM orders WHERE id = ?", Long.class, id)).isZero();
        assertThat(messages()).isEqualTo(messagesBefore);
    }

    @Test
    void aFailingStepUndoesItsJdbcWritesAndTheOrderIsCompensated() {
        String id = "o-" + UUID.randomUUID();
        MessageId message = orders.place(new Topics.Order(id, "piano", 900_000));

        assertThat(coop.awaitCompletion(message, Duration.ofSeconds(30))).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM payments WHERE order_id = ?", Long.class, id))
                .as("the payment row written by the failed step").isZero();
        assertThat(jdbc.queryForObject("SELECT status FROM orders WHERE id = ?", String.class, id))
                .isEqualTo("CANCELLED");
    }

    @Test
    void healthEndpointAndMetricsShowTheEngine() {
        MessageId message = orders.place(new Topics.Order("o-" + UUID.randomUUID(), "pen", 100));
        assertThat(coop.awaitCompletion(message, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);

        var status = health.health(true);
        assertThat(status.getStatus().getCode()).isIn("UP", "WARNING");
        assertThat(status.getDetails()).containsKeys("engine", "parked", "notifications");
        Map<String, Object> coopInfo = endpoint.coop();
        assertThat((List<?>) coopInfo.get("recentRuns")).isNotEmpty();
        assertThat(coopInfo.get("unfinishedRuns")).isInstanceOf(Map.class);

        Timer steps = meters.find("coop.step").tags("saga", "payment", "step", "charge", "outcome", "committed")
                .timer();
        assertThat(steps).isNotNull();
        assertThat(steps.count()).isPositive();
        assertThat(meters.find("coop.launches").tag("topic", "payments.charge").counter()).isNotNull();
        assertThat(meters.find("coop.runs").tag("status", RunStatus.PARKED.name()).gauge()).isNotNull();
    }

    @Test
    void stepCodeLogsWithTheRunAndStepInTheMdc() {
        MessageId message = coop.launch(MdcProbe.TOPIC, "hello");
        assertThat(coop.awaitCompletion(message, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
        assertThat(MdcProbe.seen).hasSize(1);
        assertThat(MdcProbe.seen.getFirst()).containsEntry("coop.saga", "mdc-probe").containsEntry("coop.step", "log")
                .containsEntry("coop.messageId", message.value().toString()).containsKey("coop.runId");
        assertThat(MDC.get("coop.runId")).isNull();
    }

    @Test
    void aTransactionalMethodCalledFromAStepJoinsTheStepsTransaction() {
        String id = "t-" + UUID.randomUUID();
        MessageId message = coop.launch(MdcProbe.JOINING, id);
        assertThat(coop.awaitCompletion(message, Duration.ofSeconds(30))).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM payments WHERE order_id = ?", Long.class, id))
                .as("written by a @Transactional method inside the failed step").isZero();
        assertThat(MdcProbe.joined).containsExactly(id);
    }

    /** Writes in a transaction of its own, unless one is in progress (REQUIRED). */
    static class Ledger {
        private final JdbcTemplate jdbc;

        Ledger(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @org.springframework.transaction.annotation.Transactional
        public void record(String id) {
            jdbc.update("INSERT INTO payments (order_id, amount_cents) VALUES (?, 1)", id);
            MdcProbe.joined.add(id);
        }
    }

    /** A saga that remembers the MDC its step saw. */
    @TestConfiguration
    static class MdcProbe {
        static final Topic<String> TOPIC = Topic.of("test.mdc", String.class);
        static final List<Map<String, String>> seen = new CopyOnWriteArrayList<>();
        static final Topic<String> JOINING = Topic.of("test.joining", String.class);
        static final List<String> joined = new CopyOnWriteArrayList<>();

        @Bean
        Ledger ledger(JdbcTemplate jdbc) {
            return new Ledger(jdbc);
        }

        @Bean
        Saga<String> joiningProbe(Ledger ledger) {
            return Saga.on(JOINING, "joining-probe").step("write-then-fail", step -> {
                ledger.record(step.payload());
                throw new IllegalStateException("fails after the @Transactional method returned");
            }).build();
        }

        @Bean
        Saga<String> mdcProbe() {
            return Saga.on(TOPIC, "mdc-probe").step("log", step -> seen.add(MDC.getCopyOfContextMap())).build();
        }
    }

    private long messages() {
        return jdbc.queryForObject("SELECT count(*) FROM coop.message", Long.class);
    }
}
