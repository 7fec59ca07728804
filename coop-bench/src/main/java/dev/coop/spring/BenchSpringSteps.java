package dev.coop.spring;

import dev.coop.EngineListener;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * The benchmark's way to the starter's step transactions without a Spring context: the listener the auto-configuration
 * registers, on a DataSourceTransactionManager as Boot's JDBC auto-configuration builds it. Lives in the benchmark
 * only (the starter's class is package-private).
 */
public final class BenchSpringSteps {
    private BenchSpringSteps() {
    }

    public static EngineListener listener(DataSource dataSource) {
        return StepTransactions.of(dataSource, new DataSourceTransactionManager(dataSource));
    }
}
