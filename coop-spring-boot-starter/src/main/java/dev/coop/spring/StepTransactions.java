package dev.coop.spring;

import dev.coop.EngineListener;
import dev.coop.StepContext;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * While step code runs, binds the step's connection (its transaction, which refuses commit and rollback) to Spring's
 * transaction synchronization for the application's DataSource, so that {@code JdbcTemplate}, {@code JdbcClient},
 * Spring Data JDBC repositories and {@code @Transactional} methods (joining, as with REQUIRED) take part in the step's
 * transaction; unbound when the code returns or throws.
 */
final class StepTransactions implements EngineListener {
    private final DataSource dataSource;

    StepTransactions(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** A holder of a transaction already in progress: Spring's transaction managers join it. */
    private static final class StepConnectionHolder extends ConnectionHolder {
        StepConnectionHolder(StepContext<?> step) {
            super(step.connection());
            setTransactionActive(true);
            setSynchronizedWithTransaction(true);
        }
    }

    @Override
    public Object stepStarted(StepContext<?> step, Part part) {
        if (TransactionSynchronizationManager.hasResource(dataSource)) {
            return null; // something else is bound on this thread: leave it
        }
        StepConnectionHolder holder = new StepConnectionHolder(step);
        TransactionSynchronizationManager.bindResource(dataSource, holder);
        return holder;
    }

    @Override
    public void stepEnded(StepContext<?> step, Part part, Object state, Outcome outcome, long nanos,
            Throwable failure) {
        if (state instanceof StepConnectionHolder holder
                && TransactionSynchronizationManager.getResource(dataSource) == holder) {
            TransactionSynchronizationManager.unbindResource(dataSource);
        }
    }
}
