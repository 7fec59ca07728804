package dev.coop.test;

import com.zaxxer.hikari.HikariDataSource;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension giving a test class a fresh database on this JVM's Citus cluster ({@link CoopCitus}): created on
 * the coordinator and both workers with the {@code citus} extension before the class, dropped on every node after
 * it. Register it on a static field:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final CitusDatabase db = new CitusDatabase();
 * }</pre>
 *
 * <p>
 * Without Citus on the machine the class is skipped (aborted) with a message that says how to install it; with the
 * environment variable {@code CI} set, it fails instead. Parameters of type {@link DataSource} resolve to
 * {@link #dataSource()}, a pool on the coordinator, which is where applications connect.
 */
public final class CitusDatabase implements BeforeAllCallback, AfterAllCallback, ParameterResolver {

    private final int poolSize;
    private CoopCitus cluster;
    private String databaseName;
    private String ownerId;
    private HikariDataSource sharedPool;
    private final List<HikariDataSource> pools = new ArrayList<>();

    /** Creates the extension with a shared pool of {@value CoopDatabase#DEFAULT_POOL_SIZE} connections. */
    public CitusDatabase() {
        this(CoopDatabase.DEFAULT_POOL_SIZE);
    }

    /**
     * Creates the extension.
     *
     * @param poolSize the maximum number of connections of the shared pool, at least 1
     */
    public CitusDatabase(int poolSize) {
        if (poolSize < 1) {
            throw new IllegalArgumentException("poolSize must be at least 1, but was " + poolSize);
        }
        this.poolSize = poolSize;
    }

    @Override
    public synchronized void beforeAll(ExtensionContext context) {
        if (databaseName != null) {
            return;
        }
        CoopCitus started = CoopCitus.sharedOrSkip();
        databaseName = started.createDatabase(context.getRequiredTestClass().getSimpleName());
        cluster = started;
        ownerId = context.getUniqueId();
    }

    @Override
    public synchronized void afterAll(ExtensionContext context) {
        if (databaseName == null || !context.getUniqueId().equals(ownerId)) { // a nested class's end
            return;
        }
        for (HikariDataSource pool : pools) {
            pool.close();
        }
        pools.clear();
        sharedPool = null;
        cluster.dropDatabase(databaseName);
        databaseName = null;
    }

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == DataSource.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return dataSource();
    }

    /**
     * Returns the shared pool on the coordinator's database, opening it on first use.
     *
     * @return the pool
     */
    public synchronized DataSource dataSource() {
        requireStarted();
        if (sharedPool == null) {
            sharedPool = newDataSource(poolSize);
        }
        return sharedPool;
    }

    /**
     * Opens another pool on the coordinator's database, closed with the database.
     *
     * @param maxPoolSize the maximum number of connections
     * @return the pool
     */
    public synchronized HikariDataSource newDataSource(int maxPoolSize) {
        requireStarted();
        HikariDataSource pool = cluster.dataSource(databaseName, maxPoolSize, databaseName + "-" + (pools.size() + 1));
        pools.add(pool);
        return pool;
    }

    /**
     * Returns the JDBC URL of the database on the coordinator (user {@code postgres}, no password).
     *
     * @return the URL
     */
    public synchronized String jdbcUrl() {
        requireStarted();
        return cluster.coordinator().jdbcUrl(databaseName);
    }

    /**
     * Returns the database's name (the same on every node).
     *
     * @return the name
     */
    public synchronized String databaseName() {
        requireStarted();
        return databaseName;
    }

    /**
     * Returns the cluster holding the database.
     *
     * @return the cluster
     */
    public synchronized CoopCitus cluster() {
        requireStarted();
        return cluster;
    }

    private void requireStarted() {
        if (databaseName == null) {
            throw new IllegalStateException("CitusDatabase has no database: it exists between beforeAll and afterAll"
                    + " of the test class; register it with @RegisterExtension on a static field");
        }
    }
}
