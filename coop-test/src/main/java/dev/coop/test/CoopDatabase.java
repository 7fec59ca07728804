package dev.coop.test;

import com.zaxxer.hikari.HikariDataSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A JUnit 5 extension giving a test class a fresh database of its own on the {@link CoopPostgres#shared() shared
 * server}:
 *
 * <pre>{@code
 * class OrderTest {
 *     @RegisterExtension
 *     static final CoopDatabase db = new CoopDatabase();
 *
 *     @Test
 *     void orders_are_saved(DataSource dataSource) { ... }
 * }
 * }</pre>
 *
 * <p>
 * In a {@code static} field the database is created before all tests of the class, named after it, and shared by
 * them and by {@code @Nested} classes; after all tests every pool this extension opened is closed and the database is
 * dropped. In an instance field (not recommended: it costs a database per test) each test method gets a database of
 * its own, created before and dropped after that method.
 *
 * <p>
 * Parameters of type {@link DataSource} in constructors, lifecycle and test methods are resolved to
 * {@link #dataSource()}. A class registering several {@code CoopDatabase}s must use their fields instead, because
 * JUnit rejects competing parameter resolvers. One instance must not serve test classes running concurrently.
 */
public final class CoopDatabase
        implements
            BeforeAllCallback,
            AfterAllCallback,
            BeforeEachCallback,
            AfterEachCallback,
            ParameterResolver {

    /** The default size of the shared pool. */
    public static final int DEFAULT_POOL_SIZE = 16;

    private final int poolSize;

    private CoopPostgres server;
    private String databaseName;
    private String ownerId;
    private String ownerName;
    private HikariDataSource sharedPool;
    private final List<HikariDataSource> pools = new ArrayList<>();

    /** Creates the extension with a shared pool of {@value #DEFAULT_POOL_SIZE} connections. */
    public CoopDatabase() {
        this(DEFAULT_POOL_SIZE);
    }

    /**
     * Creates the extension.
     *
     * @param poolSize the maximum number of connections of the shared pool, at least 1
     */
    public CoopDatabase(int poolSize) {
        if (poolSize < 1) {
            throw new IllegalArgumentException("poolSize must be at least 1, but was " + poolSize);
        }
        this.poolSize = poolSize;
    }

    /**
     * Creates the class's database, unless an enclosing class already did.
     *
     * @param context the class's context
     */
    @Override
    public void beforeAll(ExtensionContext context) {
        start(context, context.getRequiredTestClass().getSimpleName());
    }

    /**
     * Creates the test's database when registered in an instance field; otherwise does nothing.
     *
     * @param context the test's context
     */
    @Override
    public void beforeEach(ExtensionContext context) {
        synchronized (this) {
            if (databaseName != null) {
                return;
            }
        }
        String method = context.getTestMethod().map(m -> "_" + m.getName()).orElse("");
        start(context, context.getRequiredTestClass().getSimpleName() + method);
    }

    /**
     * Closes the pools and drops the database if they were made for this test method.
     *
     * @param context the test's context
     */
    @Override
    public void afterEach(ExtensionContext context) {
        stopIfOwner(context);
    }

    /**
     * Closes every pool this extension opened and drops the database, if they were made for this class.
     *
     * @param context the class's context
     */
    @Override
    public void afterAll(ExtensionContext context) {
        stopIfOwner(context);
    }

    /**
     * Supports parameters declared exactly as {@link DataSource}.
     *
     * @param parameterContext the parameter
     * @param extensionContext the context
     * @return whether the parameter is a {@code DataSource}
     */
    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == DataSource.class;
    }

    /**
     * Resolves a {@link DataSource} parameter to {@link #dataSource()}.
     *
     * @param parameterContext the parameter
     * @param extensionContext the context
     * @return the shared pool
     */
    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return dataSource();
    }

    /**
     * Returns the shared pool on this database, opening it on first use.
     *
     * @return the pool, of the size given to the constructor
     * @throws IllegalStateException before the database was created or after it was dropped
     */
    public synchronized DataSource dataSource() {
        requireStarted("dataSource()");
        if (sharedPool == null) {
            sharedPool = open(poolSize, databaseName);
        }
        return sharedPool;
    }

    /**
     * Opens another pool on this database, for example one per engine of a cluster test. It is closed with the
     * database, and may be closed earlier by the caller.
     *
     * @param maxPoolSize the maximum number of connections, at least 1
     * @return the new pool
     * @throws IllegalStateException before the database was created or after it was dropped
     */
    public synchronized HikariDataSource newDataSource(int maxPoolSize) {
        requireStarted("newDataSource(int)");
        return open(maxPoolSize, databaseName + "-" + (pools.size() + 1));
    }

    /**
     * Returns the JDBC URL of this database; connect with {@link CoopPostgres#user()} and
     * {@link CoopPostgres#password()} of {@link #server()}.
     *
     * @return the JDBC URL
     * @throws IllegalStateException before the database was created or after it was dropped
     */
    public synchronized String jdbcUrl() {
        requireStarted("jdbcUrl()");
        return server.jdbcUrl(databaseName);
    }

    /**
     * Returns the name of this database.
     *
     * @return the database name
     * @throws IllegalStateException before the database was created or after it was dropped
     */
    public synchronized String databaseName() {
        requireStarted("databaseName()");
        return databaseName;
    }

    /**
     * Returns the server holding this database, starting it if no test did yet.
     *
     * @return the shared server
     */
    public CoopPostgres server() {
        synchronized (this) {
            if (server != null) {
                return server;
            }
        }
        return CoopPostgres.shared();
    }

    private void start(ExtensionContext context, String prefix) {
        synchronized (this) {
            if (databaseName != null) {
                if (!isWithin(context, ownerId)) {
                    throw new IllegalStateException("This CoopDatabase already serves " + ownerName
                            + "; one instance cannot serve test classes running concurrently, such as "
                            + context.getDisplayName());
                }
                return;
            }
            CoopPostgres postgres = CoopPostgres.shared();
            databaseName = postgres.createDatabase(prefix);
            server = postgres;
            ownerId = context.getUniqueId();
            ownerName = context.getDisplayName();
        }
    }

    private static boolean isWithin(ExtensionContext context, String ancestorId) {
        for (Optional<ExtensionContext> c = Optional.of(context); c.isPresent(); c = c.get().getParent()) {
            if (c.get().getUniqueId().equals(ancestorId)) {
                return true;
            }
        }
        return false;
    }

    private synchronized void stopIfOwner(ExtensionContext context) {
        if (databaseName == null || !context.getUniqueId().equals(ownerId)) {
            return;
        }
        RuntimeException failure = null;
        for (HikariDataSource pool : pools) {
            try {
                pool.close();
            } catch (RuntimeException e) {
                failure = addFailure(failure, e);
            }
        }
        try {
            server.dropDatabase(databaseName);
        } catch (RuntimeException e) {
            failure = addFailure(failure, e);
        }
        pools.clear();
        sharedPool = null;
        databaseName = null;
        ownerId = null;
        ownerName = null;
        server = null;
        if (failure != null) {
            throw failure;
        }
    }

    private static RuntimeException addFailure(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }

    private HikariDataSource open(int maxPoolSize, String poolName) {
        HikariDataSource pool = server.dataSource(databaseName, maxPoolSize, poolName);
        pools.add(pool);
        return pool;
    }

    private void requireStarted(String method) {
        if (databaseName == null) {
            throw new IllegalStateException("CoopDatabase." + method
                    + " has no database: it exists only between beforeAll and afterAll of the test class. Register"
                    + " the extension with @RegisterExtension on a static field and use it from tests or"
                    + " lifecycle methods, not from field initializers or after the class has finished.");
        }
    }
}
