package dev.coop.spring;

import dev.coop.EngineListener;
import dev.coop.StepContext;
import dev.coop.internal.StepTransactionHook;
import java.sql.Connection;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionSynchronizationUtils;
import org.springframework.util.ClassUtils;

/**
 * Runs the code of every step (body, compensation, child-failure handler, finally part) in a Spring transaction that
 * the application's transaction manager begins on the step's connection: JdbcTemplate, JdbcClient, JPA (repositories,
 * the injected EntityManager) and {@code @Transactional} methods all work in the step's transaction. When the code
 * returns, the manager commits Spring's side (flushing JPA, running before-commit callbacks; a rollback-only mark
 * fails the step) but not the database transaction, which Coop commits with the step's log rows; when it throws, the
 * manager rolls back Spring's side and Coop undoes the step's writes.
 */
final class StepTransactions implements EngineListener, StepTransactionHook {
    private static final Logger log = LoggerFactory.getLogger(StepTransactions.class);
    private static final boolean JPA = ClassUtils.isPresent("org.springframework.orm.jpa.JpaTransactionManager",
            StepTransactions.class.getClassLoader())
            && ClassUtils.isPresent("org.hibernate.SessionFactory", StepTransactions.class.getClassLoader());
    private static final TransactionDefinition STEP = definition();

    private final PlatformTransactionManager manager;
    private final Adoption adoption;

    /** Makes a transaction manager begin on a given connection: binds what it looks for; returns the undo. */
    @FunctionalInterface
    interface Adoption {
        Runnable bind(Connection connection);
    }

    private StepTransactions(PlatformTransactionManager manager, Adoption adoption) {
        this.manager = manager;
        this.adoption = adoption;
    }

    /**
     * With the application's transaction manager when it manages Coop's DataSource (a DataSourceTransactionManager, a
     * JdbcTransactionManager, or a JpaTransactionManager with Hibernate); else with a DataSourceTransactionManager of
     * Coop's own on that DataSource.
     *
     * @param manager the application's transaction manager: the only one, or the primary one; null for none (or
     *        several, none primary)
     */
    static StepTransactions of(DataSource dataSource, PlatformTransactionManager manager) {
        if (manager instanceof DataSourceTransactionManager jdbc && same(jdbc.getDataSource(), dataSource)) {
            return new StepTransactions(manager, jdbc(jdbc.getDataSource()));
        }
        if (JPA && JpaSteps.manages(manager, dataSource)) {
            return new StepTransactions(manager, JpaSteps.adoption(manager));
        }
        if (manager != null) {
            log.info("Coop runs step code in transactions of a DataSourceTransactionManager of its own: the"
                    + " application's transaction manager ({}) does not manage Coop's DataSource (with JPA on"
                    + " another provider than Hibernate, JPA cannot take part in a step's transaction)",
                    manager.getClass().getName());
        }
        return new StepTransactions(new DataSourceTransactionManager(dataSource), jdbc(dataSource));
    }

    /** The transaction manager that begins and ends the step's Spring transaction. */
    PlatformTransactionManager manager() {
        return manager;
    }

    private static Adoption jdbc(DataSource key) {
        return connection -> {
            TransactionSynchronizationManager.bindResource(key, new ConnectionHolder(connection));
            return () -> TransactionSynchronizationManager.unbindResourceIfPossible(key);
        };
    }

    static boolean same(DataSource a, DataSource b) {
        return a != null && b != null && (a == b || TransactionSynchronizationUtils.unwrapResourceIfNecessary(a)
                .equals(TransactionSynchronizationUtils.unwrapResourceIfNecessary(b)));
    }

    private record Begun(StepConnection connection, TransactionStatus status, Runnable unbind) {
    }

    @Override
    public Object begin(StepContext<?> step) {
        if (TransactionSynchronizationManager.isSynchronizationActive()) {
            // left behind by code that ran on this engine thread before: never join it
            log.warn("A Spring transaction was still bound to engine thread {}; cleared",
                    Thread.currentThread().getName());
            TransactionSynchronizationManager.clear();
        }
        StepConnection connection = StepConnection.of(step.connection());
        Runnable unbind = adoption.bind(connection.connection());
        try {
            return new Begun(connection, manager.getTransaction(STEP), unbind);
        } catch (RuntimeException | Error e) {
            unbind.run();
            throw e;
        }
    }

    @Override
    public void end(Object state, Throwable failure) {
        Begun begun = (Begun) state;
        begun.connection().ending(true);
        try {
            if (failure == null) {
                manager.commit(begun.status()); // flushes JPA; a rollback-only mark throws: the step fails
            } else if (!begun.status().isCompleted()) {
                manager.rollback(begun.status());
            }
        } finally {
            begun.connection().ending(false);
            begun.unbind().run();
        }
    }

    private static TransactionDefinition definition() {
        DefaultTransactionDefinition definition = new DefaultTransactionDefinition(
                TransactionDefinition.PROPAGATION_REQUIRED);
        definition.setName("coop step");
        return definition;
    }
}
