package dev.coop.test;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * The one PostgreSQL server of this JVM, shared by every test and benchmark in it.
 *
 * <p>
 * If the environment variable {@code COOP_JDBC_URL} is set (for example {@code jdbc:postgresql://host:5432/postgres}),
 * that external server is used, with {@code COOP_JDBC_USER} (default {@code postgres}) and {@code COOP_JDBC_PASSWORD}
 * (default empty). The database named in that URL is the admin database, used to create and drop databases.
 * Otherwise an embedded PostgreSQL server is started once, tuned for throwaway data (no fsync, no synchronous commit,
 * many connections) and stopped by a JVM shutdown hook.
 *
 * <p>
 * Instances are thread-safe.
 */
public final class CoopPostgres {

    /** Environment variable naming an external server's JDBC URL. */
    public static final String URL_VARIABLE = "COOP_JDBC_URL";
    /** Environment variable naming the user for an external server. */
    public static final String USER_VARIABLE = "COOP_JDBC_USER";
    /** Environment variable holding the password for an external server. */
    public static final String PASSWORD_VARIABLE = "COOP_JDBC_PASSWORD";

    private static final String URL_SCHEME = "jdbc:postgresql://";
    private static final int MAX_IDENTIFIER_LENGTH = 63;
    private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    private static final String RANDOM_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

    private static final Object SHARED_LOCK = new Object();
    private static volatile CoopPostgres shared;
    private static RuntimeException sharedFailure;

    private final EmbeddedPostgres embedded;
    private final String urlPrefix;
    private final String urlQuery;
    private final String adminDatabase;
    private final String user;
    private final String password;
    private final AtomicLong counter = new AtomicLong();

    private CoopPostgres(EmbeddedPostgres embedded, String urlPrefix, String urlQuery, String adminDatabase,
            String user,
            String password) {
        this.embedded = embedded;
        this.urlPrefix = urlPrefix;
        this.urlQuery = urlQuery;
        this.adminDatabase = adminDatabase;
        this.user = user;
        this.password = password;
    }

    /**
     * Returns the server of this JVM, connecting to the external one or starting the embedded one on first use.
     *
     * @return the shared server
     * @throws IllegalStateException if the server could not be started; later calls fail the same way without retrying
     */
    public static CoopPostgres shared() {
        CoopPostgres server = shared;
        if (server != null) {
            return server;
        }
        synchronized (SHARED_LOCK) {
            if (shared != null) {
                return shared;
            }
            if (sharedFailure != null) {
                throw new IllegalStateException("PostgreSQL for tests failed to start earlier in this JVM",
                        sharedFailure);
            }
            try {
                shared = create();
                return shared;
            } catch (RuntimeException e) {
                sharedFailure = e;
                throw e;
            }
        }
    }

    private static CoopPostgres create() {
        String url = System.getenv(URL_VARIABLE);
        if (url != null && !url.isBlank()) {
            String user = System.getenv().getOrDefault(USER_VARIABLE, "postgres");
            String password = System.getenv().getOrDefault(PASSWORD_VARIABLE, "");
            CoopPostgres server = external(url.strip(), user, password);
            System.err.println("[coop-test] using " + server);
            return server;
        }
        return startEmbedded();
    }

    /**
     * Describes an external server without connecting to it.
     *
     * @param url a {@code jdbc:postgresql://} URL; its database, if any, becomes the admin database
     * @param user the user to connect as
     * @param password the password, possibly empty
     * @return the server description
     */
    static CoopPostgres external(String url, String user, String password) {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(password, "password");
        if (!url.regionMatches(true, 0, URL_SCHEME, 0, URL_SCHEME.length())) {
            throw new IllegalArgumentException(
                    URL_VARIABLE + " must start with " + URL_SCHEME + " (host, port and database), but was "
                            + url);
        }
        String rest = url.substring(URL_SCHEME.length());
        int queryStart = rest.indexOf('?');
        String query = queryStart < 0 ? "" : rest.substring(queryStart);
        String hostAndPath = queryStart < 0 ? rest : rest.substring(0, queryStart);
        int slash = hostAndPath.indexOf('/');
        String authority = slash < 0 ? hostAndPath : hostAndPath.substring(0, slash);
        String database = slash < 0 ? "" : hostAndPath.substring(slash + 1);
        if (authority.isEmpty()) {
            throw new IllegalArgumentException(URL_VARIABLE + " names no host: " + url);
        }
        String admin = database.isEmpty() ? "postgres" : database;
        return new CoopPostgres(null, URL_SCHEME + authority + "/", query, admin, user, password);
    }

    private static final java.util.Deque<Runnable> BEFORE_STOPPING = new java.util.ArrayDeque<>();

    /**
     * Runs {@code action} when the JVM shuts down (System.exit, SIGTERM, Ctrl-C), before any embedded server stops:
     * where a program closes its engines, so that they do not lose their database while they stop (shutdown hooks
     * run in no particular order). Actions run once, the last registered first; where no server is embedded, they
     * run from a shutdown hook of their own.
     */
    public static void beforeStopping(Runnable action) {
        java.util.Objects.requireNonNull(action, "action");
        synchronized (BEFORE_STOPPING) {
            if (BEFORE_STOPPING.isEmpty()) {
                Runtime.getRuntime().addShutdownHook(new Thread(CoopPostgres::runBeforeStopping,
                        "coop-before-stopping"));
            }
            BEFORE_STOPPING.push(action);
        }
    }

    /** The actions of {@link #beforeStopping}, each once; a second caller waits until the first ran them. */
    private static void runBeforeStopping() {
        synchronized (BEFORE_STOPPING) {
            while (!BEFORE_STOPPING.isEmpty()) {
                try {
                    BEFORE_STOPPING.pop().run();
                } catch (RuntimeException e) {
                    System.err.println("[coop-test] an action before stopping failed: " + e);
                }
            }
        }
    }

    private static CoopPostgres startEmbedded() {
        return startEmbedded(java.util.Map.of());
    }

    /**
     * Starts another embedded server, not the shared one: the shared one's settings with {@code settings} on top
     * (benchmarks use {@code fsync=on, synchronous_commit=on, full_page_writes=on} for durable commits). It stops
     * when the JVM exits.
     *
     * @param settings server settings that replace the defaults
     * @return the new server
     */
    public static CoopPostgres startEmbedded(java.util.Map<String, String> settings) {
        long start = System.nanoTime();
        EmbeddedPostgres postgres;
        try {
            EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setRegisterShutdownHook(false) // ours stops it, after the actions of beforeStopping
                    .setServerConfig("max_connections", "400")
                    .setServerConfig("fsync", "off")
                    .setServerConfig("synchronous_commit", "off")
                    .setServerConfig("full_page_writes", "off")
                    .setServerConfig("shared_buffers", "256MB");
            settings.forEach(builder::setServerConfig);
            postgres = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start the embedded PostgreSQL server", e);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            runBeforeStopping();
            try {
                postgres.close();
            } catch (IOException | RuntimeException e) {
                System.err.println("Could not stop the embedded PostgreSQL server: " + e);
            }
        }, "coop-embedded-postgres-shutdown"));
        String prefix = "jdbc:postgresql://localhost:" + postgres.getPort() + "/";
        CoopPostgres server = new CoopPostgres(postgres, prefix, "", "postgres", "postgres", "");
        System.err.println(
                "[coop-test] using " + server + ", started in " + (System.nanoTime() - start) / 1_000_000
                        + " ms");
        return server;
    }

    /**
     * Tells whether this server was started inside this JVM rather than named by {@code COOP_JDBC_URL}.
     *
     * @return {@code true} for the embedded server
     */
    public boolean embedded() {
        return embedded != null;
    }

    /**
     * Returns the user every connection is made as.
     *
     * @return the user name
     */
    public String user() {
        return user;
    }

    /**
     * Returns the password every connection is made with.
     *
     * @return the password, possibly empty
     */
    public String password() {
        return password;
    }

    /**
     * Returns the JDBC URL of a database on this server. For an external server, host, port and query parameters of
     * {@code COOP_JDBC_URL} are kept and only the database is replaced.
     *
     * @param database a database name of lower-case letters, digits and underscores
     * @return the JDBC URL
     * @throws IllegalArgumentException if the name is not such an identifier
     */
    public String jdbcUrl(String database) {
        Objects.requireNonNull(database, "database");
        return urlPrefix + (database.equals(adminDatabase) ? database : checkIdentifier(database)) + urlQuery;
    }

    /**
     * Creates a fresh, empty database from {@code template0} with UTF-8 encoding.
     *
     * @param prefix a readable hint such as a test class name; it is reduced to {@code [a-z0-9_]}, and a counter and
     *        a random suffix are appended, keeping the name within 63 characters
     * @return the name of the new database
     * @throws IllegalStateException if the database could not be created
     */
    public String createDatabase(String prefix) {
        String name = uniqueName(prefix);
        admin("CREATE DATABASE " + quote(name) + " TEMPLATE template0 ENCODING 'UTF8'");
        return name;
    }

    /**
     * Drops a database if it exists, ending every session connected to it.
     *
     * @param name the database name, as returned by {@link #createDatabase(String)}
     * @throws IllegalArgumentException if the name is not an identifier of lower-case letters, digits and underscores
     * @throws IllegalStateException if the database could not be dropped
     */
    public void dropDatabase(String name) {
        String checked = checkIdentifier(name);
        if (checked.equals(adminDatabase)) {
            throw new IllegalArgumentException("Refusing to drop the admin database " + name);
        }
        admin("DROP DATABASE IF EXISTS " + quote(checked) + " WITH (FORCE)");
    }

    /**
     * Opens a new connection pool on a database of this server. The caller closes it.
     *
     * @param database the database name
     * @param maxPoolSize the largest number of connections, at least 1
     * @param poolName the pool's name, also sent to the server as {@code application_name}
     * @return a pool handing out auto-commit connections, idle connections retired, waiting at most 10 s for one
     */
    public HikariDataSource dataSource(String database, int maxPoolSize, String poolName) {
        if (maxPoolSize < 1) {
            throw new IllegalArgumentException("maxPoolSize must be at least 1, but was " + maxPoolSize);
        }
        if (poolName == null || poolName.isBlank()) {
            throw new IllegalArgumentException("poolName must not be blank");
        }
        HikariConfig config = new HikariConfig();
        config.setDriverClassName("org.postgresql.Driver");
        config.setJdbcUrl(jdbcUrl(database));
        config.setUsername(user);
        config.setPassword(password);
        config.setPoolName(poolName);
        config.setMaximumPoolSize(maxPoolSize);
        config.setMinimumIdle(0);
        config.setAutoCommit(true);
        config.setConnectionTimeout(Duration.ofSeconds(10).toMillis());
        config.addDataSourceProperty("ApplicationName", poolName);
        config.addDataSourceProperty("tcpKeepAlive", "true"); // as the README recommends for every pool
        return new HikariDataSource(config);
    }

    /** The database administrative statements run in; it is never dropped. */
    String adminDatabase() {
        return adminDatabase;
    }

    /** Opens a plain connection to a database of this server; used by the kit's tests. */
    Connection connect(String database) throws SQLException {
        return DriverManager.getConnection(jdbcUrl(database), connectionProperties());
    }

    /** Reduces a hint to {@code [a-z0-9_]}, splitting camel case; never empty and never starting with a digit. */
    static String sanitize(String prefix) {
        StringBuilder out = new StringBuilder();
        String text = prefix == null ? "" : prefix;
        char previous = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isUpperCase(c)
                    && (Character.isLowerCase(previous) || Character.isDigit(previous))) {
                out.append('_');
            }
            char lower = Character.toLowerCase(c);
            boolean plain = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
            char next = plain ? lower : '_';
            if (next != '_' || (out.length() > 0 && out.charAt(out.length() - 1) != '_')) {
                out.append(next);
            }
            previous = c;
        }
        while (out.length() > 0 && out.charAt(out.length() - 1) == '_') {
            out.setLength(out.length() - 1);
        }
        if (out.isEmpty()) {
            return "coop";
        }
        if (Character.isDigit(out.charAt(0))) {
            out.insert(0, "db_");
        }
        return out.toString();
    }

    private String uniqueName(String prefix) {
        StringBuilder suffix = new StringBuilder("_").append(counter.incrementAndGet()).append('_');
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int i = 0; i < 6; i++) {
            suffix.append(RANDOM_ALPHABET.charAt(random.nextInt(RANDOM_ALPHABET.length())));
        }
        String base = sanitize(prefix);
        int room = MAX_IDENTIFIER_LENGTH - suffix.length();
        if (base.length() > room) {
            base = base.substring(0, room);
        }
        return checkIdentifier(base + suffix);
    }

    private static String checkIdentifier(String name) {
        if (name == null || !IDENTIFIER.matcher(name).matches()) {
            throw new IllegalArgumentException(
                    "Not a database name of at most 63 lower-case letters, digits and underscores: " + name);
        }
        return name;
    }

    private static String quote(String identifier) {
        return '"' + identifier + '"';
    }

    private Properties connectionProperties() {
        Properties properties = new Properties();
        properties.setProperty("user", user);
        properties.setProperty("password", password);
        properties.setProperty("connectTimeout", "10");
        properties.setProperty("ApplicationName", "coop-test-admin");
        return properties;
    }

    private void admin(String sql) {
        try (Connection connection = connect(adminDatabase);
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("Failed on " + jdbcUrl(adminDatabase) + ": " + sql, e);
        }
    }

    /**
     * Describes this server without its password.
     *
     * @return a short description
     */
    @Override
    public String toString() {
        return (embedded() ? "embedded " : "external ") + "PostgreSQL " + urlPrefix + adminDatabase + urlQuery
                + " as " + user;
    }
}
