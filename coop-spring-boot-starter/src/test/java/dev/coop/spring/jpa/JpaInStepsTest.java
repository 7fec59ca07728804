package dev.coop.spring.jpa;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.CoopClient;
import dev.coop.MessageId;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopPostgres;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * A Spring Boot service with JPA: step code runs in a transaction of Boot's JpaTransactionManager on the step's
 * connection, so repositories, the EntityManager, JdbcTemplate and @Transactional methods share it and commit or roll
 * back with the step.
 */
// closed after the class, while the embedded PostgreSQL still runs (not at JVM exit, racing its shutdown)
@DirtiesContext
@SpringBootTest(properties = {"spring.jpa.hibernate.ddl-auto=create", "coop.engine.poll-interval=200ms"})
class JpaInStepsTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        CoopPostgres server = CoopPostgres.shared();
        String database = server.createDatabase("spring_jpa");
        registry.add("spring.datasource.url", () -> server.jdbcUrl(database));
        registry.add("spring.datasource.username", server::user);
        registry.add("spring.datasource.password", server::password);
    }

    @Autowired
    CoopClient coop;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    LedgerService ledger;
    @Autowired
    PlatformTransactionManager transactionManager;

    @Test
    void repositoriesEntityManagerJdbcAndTransactionalMethodsShareTheStepsTransaction() {
        assertThat(transactionManager).isInstanceOf(JpaTransactionManager.class);
        String id = run(JpaSagas.MIX, Outcome.COMMITTED);

        assertThat(JpaSagas.SEEN).containsEntry(id + ":find-jdbc-row", true).containsEntry(id + ":supports", true)
                .containsEntry(id + ":jpql", 5L).containsEntry(id + ":jdbc", 5L)
                .containsEntry(id + ":jdbc-client", 5L).containsEntry(id + ":native", 5L);
        assertThat(amounts(id)).containsExactly(id + "-em=21", id + "-finally=9", id + "-jdbc=3",
                id + "-mandatory=4", id + "-repo=7", id + "-required=5");
    }

    @Test
    void thePersistenceContextIsClearedBetweenSteps() {
        String id = run(JpaSagas.MIX, Outcome.COMMITTED);

        assertThat(JpaSagas.SEEN).containsEntry(id + ":stale-in-step", 1) // JPA's cache within one step, as usual
                .containsEntry(id + ":next-step", 7); // a fresh persistence context in the next step
    }

    @Test
    void aFailingStepsJpaAndJdbcWritesRollBackAndTheCompensationUsesTheRepository() {
        String id = run(JpaSagas.FAIL, Outcome.ROLLED_BACK);

        assertThat(amounts(id)).containsExactly(id + "-compensated=1");
    }

    @Test
    void aRollbackOnlyMarkRollsTheWholeStepBackEvenWhenTheStepSwallowsTheException() {
        String id = run(JpaSagas.ROLLBACK_ONLY, Outcome.ROLLED_BACK);

        assertThat(JpaSagas.SEEN).containsEntry(id + ":swallowed", true);
        assertThat(amounts(id)).isEmpty();
        assertThat(jdbc.queryForObject("SELECT r.failure::text FROM coop.run r JOIN coop.message m"
                + " ON m.id = r.message_id WHERE m.payload = to_jsonb(?::text)", String.class, id))
                .contains("rollback-only");
    }

    @Test
    void aChildFailureHandlerWritesWithTheRepositoryInItsTransaction() {
        String id = run(JpaSagas.PARENT, Outcome.COMMITTED); // the child rolled back; the parent handled it

        assertThat(amounts(id)).containsExactly(id + "-handled=1");
    }

    @Test
    void requiresNewCommitsOnItsOwnWhateverTheStepDoes() {
        String id = run(JpaSagas.REQUIRES_NEW, Outcome.ROLLED_BACK);

        assertThat(amounts(id)).containsExactly(id + "-audit=1");
    }

    @Test
    void stepCodeCannotCommitTheStepsTransactionThroughJpaOrSpring() {
        String id = run(JpaSagas.NO_COMMIT, Outcome.ROLLED_BACK);

        assertThat(JpaSagas.SEEN.get(id + ":getTransaction")).asString().contains("shared EntityManager");
        assertThat(JpaSagas.SEEN.get(id + ":session-commit")).asString().contains("must not call Connection.commit");
        assertThat(amounts(id)).isEmpty();
    }

    @Test
    void aLaunchInATransactionalJpaMethodCommitsWithTheEntity() {
        String id = "o-" + UUID.randomUUID();
        MessageId message = ledger.open(id, false);

        assertThat(coop.awaitCompletion(message, TIMEOUT)).isEqualTo(Outcome.COMMITTED);
        assertThat(amounts(id)).containsExactly(id + "=100");
    }

    @Test
    void aTransactionalJpaMethodThatRollsBackLaunchesNothing() {
        String id = "o-" + UUID.randomUUID();
        assertThatThrownBy(() -> ledger.open(id, true)).isInstanceOf(IllegalStateException.class);

        assertThat(amounts(id)).isEmpty();
        assertThat(
                jdbc.queryForObject("SELECT count(*) FROM coop.message WHERE topic = ? AND payload = to_jsonb(?::text)",
                        Long.class, JpaSagas.OPENED.name(), id))
                .isZero();
    }

    private String run(Topic<String> topic, Outcome expected) {
        String id = topic.name() + "-" + UUID.randomUUID();
        MessageId message = coop.launch(topic, id);
        assertThat(coop.awaitCompletion(message, TIMEOUT)).isEqualTo(expected);
        return id;
    }

    private List<String> amounts(String id) {
        return jdbc.queryForList("SELECT id || '=' || amount FROM ledger WHERE id = ? OR id LIKE ? ORDER BY id",
                String.class, id, id + "-%");
    }
}
