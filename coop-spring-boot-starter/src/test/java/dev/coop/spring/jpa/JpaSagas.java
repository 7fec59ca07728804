package dev.coop.spring.jpa;

import dev.coop.ChildFailureFlow;
import dev.coop.Saga;
import dev.coop.Topic;
import jakarta.persistence.EntityManager;
import jakarta.persistence.EntityManagerFactory;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.hibernate.Session;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.orm.jpa.EntityManagerFactoryUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;

/** Sagas whose steps use JPA, JDBC and @Transactional services together; what they observe goes to {@link #SEEN}. */
@Configuration(proxyBeanMethods = false)
public class JpaSagas {
    public static final Topic<String> MIX = Topic.of("jpa-mix", String.class);
    public static final Topic<String> FAIL = Topic.of("jpa-fail", String.class);
    public static final Topic<String> ROLLBACK_ONLY = Topic.of("jpa-rollback-only", String.class);
    public static final Topic<String> REQUIRES_NEW = Topic.of("jpa-requires-new", String.class);
    public static final Topic<String> NO_COMMIT = Topic.of("jpa-no-commit", String.class);
    public static final Topic<String> OPENED = Topic.of("jpa-opened", String.class);
    public static final Topic<String> DEPOSIT = Topic.of("deposits", String.class);
    public static final Topic<String> PARENT = Topic.of("jpa-parent", String.class);
    public static final Topic<String> CHILD = Topic.of("jpa-child", String.class);
    /** What the steps observed, by the step's payload plus a name. */
    public static final Map<String, Object> SEEN = new ConcurrentHashMap<>();

    // tag::spring-jpa-saga[]
    @Bean
    Saga<String> depositSaga(EntryRepository entries, LedgerService ledger) {
        return Saga.on(DEPOSIT, "deposit")
                .step("record", step -> entries.save(new Entry(step.payload(), 100))) // in the step's transaction
                .compensateWith((step, cause) -> entries.deleteById(step.payload()))
                .step("audit", step -> ledger.add(step.payload() + "-audit", 0)) // @Transactional: joins it
                .build();
    }
    // end::spring-jpa-saga[]

    /** Every way to reach the database in one step, each seeing the others' writes; then a fresh persistence context. */
    @Bean
    Saga<String> mixSaga(EntryRepository entries, EntityManager em, JdbcTemplate jdbc, JdbcClient client,
            LedgerService ledger) {
        return Saga.on(MIX, "jpa-mix").step("write", step -> {
            String id = step.payload();
            entries.save(new Entry(id + "-repo", 1));
            em.persist(new Entry(id + "-em", 2));
            jdbc.update("INSERT INTO ledger (id, amount) VALUES (?, 3)", id + "-jdbc");
            ledger.addMandatory(id + "-mandatory", 4);
            ledger.add(id + "-required", 5);
            SEEN.put(id + ":find-jdbc-row", em.find(Entry.class, id + "-jdbc") != null);
            SEEN.put(id + ":supports", ledger.find(id + "-jdbc").isPresent());
            SEEN.put(id + ":jpql", em.createQuery("SELECT count(e) FROM Entry e WHERE e.id LIKE :p", Long.class)
                    .setParameter("p", id + "-%").getSingleResult()); // flushes first
            SEEN.put(id + ":jdbc", jdbc.queryForObject("SELECT count(*) FROM ledger WHERE id LIKE ?", Long.class,
                    id + "-%"));
            SEEN.put(id + ":jdbc-client", client.sql("SELECT count(*) FROM ledger WHERE id LIKE ?")
                    .param(id + "-%").query(Long.class).single());
            SEEN.put(id + ":native", ((Number) em.createNativeQuery("SELECT count(*) FROM ledger WHERE id LIKE ?")
                    .setParameter(1, id + "-%").getSingleResult()).longValue());
            Entry loaded = em.find(Entry.class, id + "-repo"); // managed, amount 1
            jdbc.update("UPDATE ledger SET amount = 7 WHERE id = ?", id + "-repo"); // behind JPA's back
            SEEN.put(id + ":stale-in-step", loaded.getAmount());
        }).step("read", step -> {
            String id = step.payload();
            SEEN.put(id + ":next-step", em.find(Entry.class, id + "-repo").getAmount()); // not the stale entity
            Entry merged = em.merge(new Entry(id + "-em", 20));
            merged.setAmount(21); // dirty checking: flushed at the step's end
        }).andFinally(step -> entries.save(new Entry(step.payload() + "-finally", 9))).build();
    }

    /** A failing step's JPA and JDBC writes are undone; an earlier step's compensation uses the repository. */
    @Bean
    Saga<String> failSaga(EntryRepository entries, JdbcTemplate jdbc) {
        return Saga.on(FAIL, "jpa-fail").step("first", step -> entries.save(new Entry(step.payload() + "-first", 1)))
                .compensateWith((step, cause) -> {
                    entries.deleteById(step.payload() + "-first");
                    entries.save(new Entry(step.payload() + "-compensated", 1));
                }).step("second", step -> {
                    entries.save(new Entry(step.payload() + "-second", 2));
                    jdbc.update("INSERT INTO ledger (id, amount) VALUES (?, 3)", step.payload() + "-jdbc");
                    throw new IllegalStateException("second fails");
                }).build();
    }

    /** A @Transactional method that fails marks the step's transaction rollback-only; swallowing it does not help. */
    @Bean
    Saga<String> rollbackOnlySaga(LedgerService ledger, JdbcTemplate jdbc) {
        return Saga.on(ROLLBACK_ONLY, "jpa-rollback-only").step("swallow", step -> {
            jdbc.update("INSERT INTO ledger (id, amount) VALUES (?, 3)", step.payload() + "-jdbc");
            try {
                ledger.addThenFail(step.payload() + "-marked");
            } catch (IllegalStateException swallowed) {
                SEEN.put(step.payload() + ":swallowed", true);
            }
        }).build();
    }

    /** REQUIRES_NEW commits on its own, whatever the step does next. */
    @Bean
    Saga<String> requiresNewSaga(LedgerService ledger, EntryRepository entries) {
        return Saga.on(REQUIRES_NEW, "jpa-requires-new").step("audit", step -> {
            ledger.addInOwnTransaction(step.payload() + "-audit", 1);
            entries.save(new Entry(step.payload() + "-main", 2));
            throw new IllegalStateException("the step fails after its audit");
        }).build();
    }

    /** Step code cannot end the step's transaction through JPA or Spring. */
    @Bean
    Saga<String> noCommitSaga(EntryRepository entries, EntityManager em, EntityManagerFactory emf,
            PlatformTransactionManager tm) {
        return Saga.on(NO_COMMIT, "jpa-no-commit").step("try", step -> {
            String id = step.payload();
            try {
                em.getTransaction();
            } catch (IllegalStateException e) {
                SEEN.put(id + ":getTransaction", e.getMessage());
            }
            entries.saveAndFlush(new Entry(id + "-session", 1));
            try {
                // the step's own session, not the shared proxy (which refuses getTransaction() as above)
                EntityManagerFactoryUtils.getTransactionalEntityManager(emf).unwrap(Session.class).getTransaction()
                        .commit();
            } catch (RuntimeException e) {
                StringBuilder causes = new StringBuilder();
                for (Throwable t = e; t != null; t = t.getCause()) {
                    causes.append(t).append('\n');
                }
                SEEN.put(id + ":session-commit", causes.toString());
            }
            TransactionStatus status = tm.getTransaction(new DefaultTransactionDefinition());
            entries.saveAndFlush(new Entry(id + "-status", 1));
            tm.commit(status); // joins the step's transaction: commits nothing
            throw new IllegalStateException("the step fails after its tricks");
        }).build();
    }

    /** A child-failure handler writes with the repository in its own step transaction; the child's writes are undone. */
    @Bean
    Saga<String> parentSaga(EntryRepository entries) {
        return Saga.on(PARENT, "jpa-parent").step("spawn", step -> step.launch(CHILD, step.payload()))
                .onChildFailure((ChildFailureFlow<String>) (step, failure, handling, pending) -> {
                    entries.save(new Entry(step.payload() + "-handled", handling));
                    return pending;
                }).build();
    }

    @Bean
    Saga<String> childSaga(EntryRepository entries) {
        return Saga.on(CHILD, "jpa-child").step("fail", step -> {
            entries.saveAndFlush(new Entry(step.payload() + "-child", 1));
            throw new IllegalStateException("the child fails");
        }).build();
    }

    /** Handles the outbox test's messages. */
    @Bean
    Saga<String> openedSaga(EntryRepository entries) {
        return Saga.on(OPENED, "jpa-opened").step("confirm", step -> {
            Entry entry = entries.findById(step.payload()).orElseThrow();
            entry.setAmount(100);
        }).build();
    }
}
