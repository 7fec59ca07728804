package dev.coop.spring;

import jakarta.persistence.EntityManagerFactory;
import javax.sql.DataSource;
import org.hibernate.Session;
import org.hibernate.SessionFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.orm.jpa.EntityManagerHolder;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * JPA in steps, with Hibernate: a session of its own for each step's code, on the step's connection, bound before the
 * JpaTransactionManager begins, so that the manager uses it (and exposes its connection to JdbcTemplate). Closed when
 * the code ends: no entity state carries over from one step to the next.
 */
final class JpaSteps {
    private static final Logger log = LoggerFactory.getLogger(JpaSteps.class);

    private JpaSteps() {
    }

    static boolean manages(PlatformTransactionManager manager, DataSource dataSource) {
        return manager instanceof JpaTransactionManager jpa && jpa.getEntityManagerFactory() != null
                && StepTransactions.same(jpa.getDataSource(), dataSource)
                && unwrap(jpa.getEntityManagerFactory()) != null;
    }

    static StepTransactions.Adoption adoption(PlatformTransactionManager manager) {
        EntityManagerFactory key = ((JpaTransactionManager) manager).getEntityManagerFactory();
        SessionFactory sessions = unwrap(key);
        return connection -> {
            Session session = sessions.withOptions().connection(connection).openSession();
            TransactionSynchronizationManager.bindResource(key, new EntityManagerHolder(session));
            return () -> {
                TransactionSynchronizationManager.unbindResourceIfPossible(key);
                try {
                    session.close(); // does not close the step's connection: Hibernate was given it
                } catch (RuntimeException e) {
                    log.debug("Closing the step's JPA session failed; its entities are dropped anyway", e);
                }
            };
        };
    }

    private static SessionFactory unwrap(EntityManagerFactory factory) {
        try {
            return factory.unwrap(SessionFactory.class);
        } catch (RuntimeException e) {
            return null;
        }
    }
}
