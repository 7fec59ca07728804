package dev.coop.spring;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The application's DataSource as Coop's client sees it: inside a Spring-managed transaction (a
 * {@code @Transactional} method, or a step's transaction bound by {@link StepTransactions}), the connection of that
 * transaction, so that a launch commits with the caller's writes or not at all; elsewhere a connection of its own.
 */
final class SpringTransactionDataSource extends DelegatingDataSource {
    SpringTransactionDataSource(DataSource target) {
        super(target);
    }

    @Override
    public Connection getConnection() throws SQLException {
        Connection joined = transactional(obtainTargetDataSource());
        return joined != null ? joined : super.getConnection();
    }

    /** The connection of the transaction bound to this thread for {@code dataSource}, joined; else null. */
    static Connection transactional(DataSource dataSource) {
        if (TransactionSynchronizationManager.getResource(dataSource) instanceof ConnectionHolder holder
                && holder.getConnectionHandle() != null && (holder.isSynchronizedWithTransaction()
                        || TransactionSynchronizationManager.isActualTransactionActive())) {
            return JoinedConnection.wrap(holder.getConnection());
        }
        return null;
    }
}
