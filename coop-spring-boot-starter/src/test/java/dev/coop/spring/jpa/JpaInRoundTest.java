package dev.coop.spring.jpa;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.CoopClient;
import dev.coop.EngineListener;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopPostgres;
import dev.coop.test.StepGate;
import dev.coop.test.TestClock;
import jakarta.persistence.EntityManager;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.hibernate.Session;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * JPA steps of several runs committed in one transaction (a round) stay isolated: each step's persistence context
 * holds only what that step touched, is flushed at the step's end, and a step that fails rolls back its JPA writes
 * alone while the others of the round commit. The round of 8 is forced by holding the engine's only worker while 8
 * runs are launched; a {@code TimeSource} bean (a frozen clock) is the engine's and the client's time.
 */
@DirtiesContext
@SpringBootTest(properties = {"spring.jpa.hibernate.ddl-auto=create", "coop.engine.poll-interval=200ms",
        "coop.engine.workers=1", "coop.engine.max-runs-per-transaction=8"})
class JpaInRoundTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    static final Topic<String> HOLD = Topic.of("jpa-round-hold", String.class);
    static final Topic<String> ROUND = Topic.of("jpa-round", String.class);
    static final StepGate GATE = new StepGate();
    static final List<int[]> ROUNDS = new CopyOnWriteArrayList<>();
    /** How many entities each step's persistence context held after it saved its own, by payload. */
    static final Map<String, Integer> MANAGED = new ConcurrentHashMap<>();

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        CoopPostgres server = CoopPostgres.shared();
        String database = server.createDatabase("spring_jpa_round");
        registry.add("spring.datasource.url", () -> server.jdbcUrl(database));
        registry.add("spring.datasource.username", server::user);
        registry.add("spring.datasource.password", server::password);
    }

    @TestConfiguration(proxyBeanMethods = false)
    static class RoundSagas {
        /**
         * The engine's and client's time, frozen: a round's time budget is measured with it, so the round is not cut
         * short however slow the machine.
         */
        @Bean
        TestClock clock() {
            return new TestClock();
        }

        @Bean
        Saga<String> holdSaga() {
            return Saga.on(HOLD, "jpa-round-hold").step("hold", step -> GATE.pass()).build();
        }

        @Bean
        Saga<String> roundSaga(EntryRepository entries, EntityManager em) {
            return Saga.on(ROUND, "jpa-round")
                    .step("write", step -> {
                        entries.save(new Entry(step.payload(), 1));
                        MANAGED.put(step.payload(), em.unwrap(Session.class).getStatistics().getEntityCount());
                        if (step.payload().endsWith("-fail")) {
                            em.flush(); // its row is written in the round's transaction, then undone
                            throw new IllegalStateException("this step fails");
                        }
                    })
                    .step("after", step -> {
                    })
                    .build();
        }

        @Bean
        EngineListener rounds() {
            return new EngineListener() {
                @Override
                public void roundCommitted(String saga, int claimed, int executed) {
                    ROUNDS.add(new int[]{claimed, executed});
                }
            };
        }
    }

    @Autowired
    CoopClient coop;
    @Autowired
    JdbcTemplate jdbc;

    @Test
    void jpaStepsInOneRoundEachSeeOnlyTheirOwnEntitiesAndAFailingOneRollsBackAlone() {
        MessageId hold = coop.launch(HOLD, "hold");
        GATE.awaitArrivals(1, TIMEOUT);
        String prefix = "round-" + UUID.randomUUID();
        Map<String, MessageId> ids = new LinkedHashMap<>();
        for (int i = 0; i < 8; i++) {
            String id = prefix + "-" + i + (i == 3 ? "-fail" : "");
            ids.put(id, coop.launch(ROUND, id));
        }
        GATE.open();
        assertThat(coop.awaitCompletion(hold, TIMEOUT)).isEqualTo(Outcome.COMMITTED);
        ids.forEach((id, message) -> assertThat(coop.awaitCompletion(message, TIMEOUT)).as(id)
                .isEqualTo(id.endsWith("-fail") ? Outcome.ROLLED_BACK : Outcome.COMMITTED));

        assertThat(ROUNDS).as("the 8 runs went in one round").anySatisfy(r -> assertThat(r).containsExactly(8, 8));
        assertThat(MANAGED).hasSize(8).allSatisfy((id, managed) -> assertThat(managed).as(id).isEqualTo(1));
        assertThat(jdbc.queryForList("SELECT id FROM ledger WHERE id LIKE ? ORDER BY id", String.class,
                prefix + "-%")).hasSize(7).noneMatch(id -> id.endsWith("-fail"));
    }
}
