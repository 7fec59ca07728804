package dev.coop.test;

import com.zaxxer.hikari.HikariDataSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Properties;
import org.opentest4j.TestAbortedException;

/**
 * The one Citus cluster of this JVM: a coordinator and two workers, each a PostgreSQL 15 server of its own on
 * 127.0.0.1, started from Java on free ports with data directories in a temporary directory, and stopped and deleted
 * when the JVM exits. It is the three-node cluster of {@code shared/citus/cluster.sh}, made by the kit so that a test
 * needs nothing running beforehand.
 *
 * <p>
 * Citus is found as Debian's PostgreSQL 15 binaries ({@value #DEFAULT_BIN}, or the directory named by
 * {@value #BIN_VARIABLE}) with {@code citus.so} in their library directory. Without it, {@link #sharedOrSkip()}
 * aborts the test with a message that says how to install Citus, except when the environment variable {@code CI} is
 * set: a CI machine is meant to have it, so the test fails there instead of silently passing.
 *
 * <p>
 * When the JVM runs as root, the servers run as the {@code postgres} user (PostgreSQL refuses root), by
 * {@code runuser}. Every database {@link #createDatabase(String)} makes exists on all three nodes with the
 * {@code citus} extension, the coordinator registered and the workers added to its metadata: Citus keeps its
 * metadata per database.
 *
 * <p>
 * Instances are thread-safe.
 */
public final class CoopCitus {

    /** Environment variable naming the directory of PostgreSQL 15's binaries (initdb, pg_ctl, pg_config). */
    public static final String BIN_VARIABLE = "COOP_CITUS_BIN";
    static final String DEFAULT_BIN = "/usr/lib/postgresql/15/bin";
    static final String HOW_TO_INSTALL = "Citus is not installed on this machine (no citus.so for the PostgreSQL 15"
            + " of %s): run shared/citus/install.sh as root (Citus 13.2.2 for Debian's PostgreSQL 15; .ci/run does"
            + " so from ${COOP_CITUS_DIR:-../shared/citus}), or set " + BIN_VARIABLE + " to a PostgreSQL bin"
            + " directory whose server has the citus extension";

    private static final Object LOCK = new Object();
    private static CoopCitus shared;
    private static RuntimeException failure;

    /** The three servers (processes, data directories, ports). */
    private final CitusNodes nodes;
    private final List<Integer> ports;
    private volatile long startMillis;
    private final CoopPostgres coordinator;

    private CoopCitus(CitusNodes nodes) {
        this.nodes = nodes;
        this.ports = nodes.ports();
        this.coordinator = CoopPostgres.external("jdbc:postgresql://127.0.0.1:" + ports.get(0) + "/postgres",
                "postgres", "");
    }

    /**
     * Tells why Citus cannot run here, or null when it can.
     *
     * @return the reason with install instructions, or null
     */
    public static String missingReason() {
        Path bin = bin();
        if (!Files.isExecutable(bin.resolve("initdb")) || !Files.isExecutable(bin.resolve("pg_ctl"))
                || !Files.isExecutable(bin.resolve("pg_config"))) {
            return String.format(HOW_TO_INSTALL, bin);
        }
        Path lib = Paths
                .get(CitusNodes.run(List.of(bin.resolve("pg_config").toString(), "--pkglibdir"), false).strip());
        return Files.isRegularFile(lib.resolve("citus.so")) ? null : String.format(HOW_TO_INSTALL, bin);
    }

    /**
     * Returns the cluster of this JVM, starting it on first use; aborts the calling test when Citus is not installed
     * (fails it when {@code CI} is set).
     *
     * @return the running cluster
     * @throws TestAbortedException when Citus is missing outside CI
     * @throws IllegalStateException when Citus is missing on CI, or the cluster could not start
     */
    public static CoopCitus sharedOrSkip() {
        String missing = missingReason();
        if (missing != null) {
            String ci = System.getenv("CI");
            if (ci != null && !ci.isBlank()) {
                throw new IllegalStateException("CI is set, so the Citus suite must run: " + missing);
            }
            throw new TestAbortedException(missing);
        }
        return shared();
    }

    /**
     * Returns the cluster of this JVM, starting it on first use.
     *
     * @return the running cluster
     * @throws IllegalStateException if it could not start; later calls fail the same way without retrying
     */
    public static CoopCitus shared() {
        synchronized (LOCK) {
            if (shared != null) {
                return shared;
            }
            if (failure != null) {
                throw new IllegalStateException("The Citus cluster failed to start earlier in this JVM", failure);
            }
            try {
                shared = start();
                return shared;
            } catch (RuntimeException e) {
                failure = e;
                throw e;
            }
        }
    }

    private static Path bin() {
        String named = System.getenv(BIN_VARIABLE);
        return Paths.get(named == null || named.isBlank() ? DEFAULT_BIN : named.strip());
    }

    private static CoopCitus start() {
        long start = System.nanoTime();
        CoopCitus cluster = new CoopCitus(CitusNodes.start(bin()));
        cluster.startMillis = (System.nanoTime() - start) / 1_000_000;
        System.err.println("[coop-test] started " + cluster);
        return cluster;
    }

    /**
     * Stops one node at once, as a crash would ({@code pg_ctl stop -m immediate}: no checkpoint, every session cut).
     * What it acknowledged as committed survives (the nodes run {@code synchronous_commit = on}); what was in
     * flight is rolled back by its crash recovery when it starts again. The cluster is shared by the test classes of
     * this JVM: a test that stops a node starts it again
     * ({@link #startNode(int)}) before it ends, in a {@code finally}.
     *
     * @param port the node's port, one of {@link #ports()}
     * @throws IllegalStateException if pg_ctl fails
     */
    public void stopNode(int port) {
        nodes.stopNode(port);
    }

    /**
     * Starts a node that {@link #stopNode(int)} stopped, on the same port and data, and returns once it accepts
     * connections (after its crash recovery).
     *
     * @param port the node's port, one of {@link #ports()}
     * @throws IllegalStateException if pg_ctl fails
     */
    public void startNode(int port) {
        nodes.startNode(port);
    }

    /**
     * Returns a node's server log (pg_ctl's {@code -l} file), for tests that read what Citus logged.
     *
     * @param port the node's port, one of {@link #ports()}
     * @return the log file
     */
    public Path logFile(int port) {
        return nodes.logFile(port);
    }

    /**
     * Returns the coordinator as a server of the kit: its data sources and JDBC URLs are the ones tests use.
     *
     * @return the coordinator
     */
    public CoopPostgres coordinator() {
        return coordinator;
    }

    /**
     * Returns the ports of the three nodes, the coordinator's first.
     *
     * @return the ports
     */
    public List<Integer> ports() {
        return ports;
    }

    /**
     * Returns how long starting the cluster took (initdb and start of three nodes).
     *
     * @return milliseconds
     */
    public long startMillis() {
        return startMillis;
    }

    /**
     * Creates a database on every node with the {@code citus} extension, registers the coordinator and adds the
     * workers to its metadata.
     *
     * @param prefix a readable hint such as a test class name, as for {@link CoopPostgres#createDatabase(String)}
     * @return the new database's name
     */
    public String createDatabase(String prefix) {
        String name = coordinator.createDatabase(prefix);
        try {
            for (int port : ports.subList(1, ports.size())) {
                execute(port, "postgres", "CREATE DATABASE \"" + name + "\" TEMPLATE template0 ENCODING 'UTF8'");
            }
            for (int port : ports) {
                execute(port, name, "CREATE EXTENSION citus");
            }
            try (Connection c = connect(ports.get(0), name)) {
                call(c, "SELECT citus_set_coordinator_host(?, ?)", ports.get(0));
                for (int port : ports.subList(1, ports.size())) {
                    call(c, "SELECT citus_add_node(?, ?)", port);
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("Could not create the Citus database " + name, e);
        }
        return name;
    }

    /**
     * Drops a database on every node, ending its sessions.
     *
     * @param name the database, as {@link #createDatabase(String)} returned it
     */
    public void dropDatabase(String name) {
        coordinator.dropDatabase(name);
        for (int port : ports.subList(1, ports.size())) {
            try {
                execute(port, "postgres", "DROP DATABASE IF EXISTS \"" + name + "\" WITH (FORCE)");
            } catch (SQLException e) {
                throw new IllegalStateException("Could not drop " + name + " on the worker " + port, e);
            }
        }
    }

    /**
     * Opens a pool on a database of the coordinator; the caller closes it.
     *
     * @param database the database
     * @param maxPoolSize the largest number of connections
     * @param poolName the pool's name
     * @return the pool
     */
    public HikariDataSource dataSource(String database, int maxPoolSize, String poolName) {
        return coordinator.dataSource(database, maxPoolSize, poolName);
    }

    /**
     * Opens a plain connection to one node; the caller closes it.
     *
     * @param port the node's port, one of {@link #ports()}
     * @param database the database
     * @return the connection
     * @throws SQLException if it cannot connect
     */
    public Connection connect(int port, String database) throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("user", "postgres");
        properties.setProperty("connectTimeout", "10");
        properties.setProperty("ApplicationName", "coop-test-citus");
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/" + database, properties);
    }

    private void execute(int port, String database, String sql) throws SQLException {
        try (Connection c = connect(port, database); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    private static void call(Connection c, String sql, int port) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, "127.0.0.1");
            ps.setInt(2, port);
            ps.execute();
        }
    }

    /**
     * Describes the cluster.
     *
     * @return its nodes and data directory
     */
    @Override
    public String toString() {
        return "Citus cluster on 127.0.0.1 ports " + ports + " (coordinator first), data in " + nodes.data()
                + (startMillis > 0 ? ", started in " + startMillis + " ms" : "");
    }
}
