package dev.coop.bench;

import dev.coop.test.CoopCitus;
import dev.coop.test.CoopPostgres;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The test kit's three-node Citus cluster ({@link CoopCitus}: a coordinator and two workers on free ports of
 * 127.0.0.1, PostgreSQL 15, {@code fsync} off) as the benchmark uses it: databases with the {@code citus} extension
 * on every node, plain databases on the coordinator alone (the same server binaries and settings without
 * distribution: the plain PostgreSQL the cluster is compared with), each node's server CPU, and the two-phase
 * commits Citus logged.
 *
 * <p>
 * Two-phase commits are counted in {@code pg_dist_transaction}: Citus writes a row there for every worker
 * transaction it prepares, in the coordinator's transaction, and its recovery deletes the rows of committed ones
 * later. The cluster is this JVM's own, so recovery is switched off for the benchmark
 * ({@code citus.recover_2pc_interval = -1}) and every row stays countable.
 */
final class CitusCluster {
    private static final long TICK_NANOS = 10_000_000L; // USER_HZ = 100 on Linux x86-64

    /** One node: its role ("coordinator", "worker1", ...), port and postmaster's pid. */
    record Node(String role, int port, long postmaster) {
    }

    final CoopCitus cluster;
    final List<Node> nodes;

    private CitusCluster(CoopCitus cluster, List<Node> nodes) {
        this.cluster = cluster;
        this.nodes = nodes;
    }

    /** Starts (or joins) this JVM's cluster and finds each node's postmaster. */
    static CitusCluster start() {
        String missing = CoopCitus.missingReason();
        if (missing != null) {
            throw new IllegalStateException("workload citus needs Citus: " + missing);
        }
        CoopCitus cluster = CoopCitus.shared();
        List<Node> nodes = new ArrayList<>();
        List<Integer> ports = cluster.ports();
        for (int i = 0; i < ports.size(); i++) {
            int port = ports.get(i);
            try (Connection c = cluster.connect(port, "postgres"); Statement st = c.createStatement()) {
                if (i == 0) {
                    st.execute("ALTER SYSTEM SET citus.recover_2pc_interval = -1");
                    st.execute("SELECT pg_reload_conf()");
                }
                try (ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                    rs.next();
                    nodes.add(new Node(i == 0 ? "coordinator" : "worker" + i, port, ppid(rs.getLong(1))));
                }
            } catch (SQLException e) {
                throw new IllegalStateException("Could not reach Citus node " + port, e);
            }
        }
        Bench.progress("citus: " + cluster + "; postmasters " + nodes);
        return new CitusCluster(cluster, List.copyOf(nodes));
    }

    CoopPostgres coordinator() {
        return cluster.coordinator();
    }

    /** A new database: distributed (the extension on every node) or plain (on the coordinator, no extension). */
    String createDatabase(String prefix, boolean citus) {
        return citus ? cluster.createDatabase(prefix) : cluster.coordinator().createDatabase(prefix);
    }

    void dropDatabase(String name, boolean citus) {
        if (citus) {
            cluster.dropDatabase(name);
        } else {
            cluster.coordinator().dropDatabase(name);
        }
    }

    /** Each node's server CPU so far, nanoseconds, in {@link #nodes}' order. */
    long[] cpuNanos() {
        long[] out = new long[nodes.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = serverTicks(nodes.get(i).postmaster()) * TICK_NANOS;
        }
        return out;
    }

    /**
     * Server CPU per unit between two {@link #cpuNanos()}, per node and for the cluster, as
     * {@code <role>CpuUsPer<unit>}, and each node's cores over {@code seconds}.
     */
    void perUnit(Map<String, Object> m, long[] before, long[] after, double units, String unit, double seconds) {
        long total = 0;
        Map<String, Object> cores = new LinkedHashMap<>();
        for (int i = 0; i < nodes.size(); i++) {
            long d = after[i] - before[i];
            total += d;
            m.put(nodes.get(i).role() + "CpuUsPer" + unit, Stats.round(d / 1e3 / units, 1));
            cores.put(nodes.get(i).role(), Stats.round(d / 1e9 / seconds, 3));
        }
        m.put("serversCpuUsPer" + unit, Stats.round(total / 1e3 / units, 1));
        m.put("serverCores", cores);
    }

    /**
     * The two-phase commits logged in a Citus database so far: {@code prepared} worker transactions and the
     * distributed transactions they belong to (a gid is {@code citus_<group>_<pid>_<transaction>_<connection>}).
     */
    long[] twoPhaseCommits(String database) {
        try (Connection c = cluster.connect(cluster.ports().getFirst(), database);
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*), count(DISTINCT (split_part(gid, '_', 3),"
                        + " split_part(gid, '_', 4))) FROM pg_dist_transaction")) {
            rs.next();
            return new long[]{rs.getLong(1), rs.getLong(2)};
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read pg_dist_transaction in " + database, e);
        }
    }

    /** Sessions the workers' servers opened in a database so far ({@code pg_stat_database.sessions}, summed). */
    long workerSessions(String database) {
        long sum = 0;
        for (Node node : nodes.subList(1, nodes.size())) {
            try (Connection c = cluster.connect(node.port(), database);
                    Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery(
                            "SELECT sessions FROM pg_stat_database WHERE datname = current_database()")) {
                rs.next();
                sum += rs.getLong(1) - 1; // less this connection
            } catch (SQLException e) {
                throw new IllegalStateException("Could not read sessions on " + node, e);
            }
        }
        return sum;
    }

    /**
     * A server's CPU in clock ticks: the postmaster's own and its reaped children's (backends that exited, such as
     * the connections Citus opens to a worker for one transaction), plus every live child's.
     */
    static long serverTicks(long postmaster) {
        long[] pm = stat(Path.of("/proc", Long.toString(postmaster), "stat"));
        if (pm == null) {
            return -1;
        }
        long sum = pm[1] + pm[2];
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path d : dirs) {
                long[] s = stat(d.resolve("stat"));
                if (s != null && s[0] == postmaster) {
                    sum += s[1];
                }
            }
        } catch (IOException e) {
            return -1;
        }
        return sum;
    }

    private static long ppid(long pid) {
        long[] s = stat(Path.of("/proc", Long.toString(pid), "stat"));
        if (s == null) {
            throw new IllegalStateException("workload citus reads server CPU from /proc: no /proc/" + pid);
        }
        return s[0];
    }

    /** {ppid, utime+stime, cutime+cstime} of a /proc/PID/stat file, or null. */
    private static long[] stat(Path file) {
        try {
            String s = Files.readString(file);
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            // after the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
            return new long[]{Long.parseLong(f[1]), Long.parseLong(f[11]) + Long.parseLong(f[12]),
                    Long.parseLong(f[13]) + Long.parseLong(f[14])};
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
