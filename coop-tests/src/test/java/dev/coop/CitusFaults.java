package dev.coop;

import dev.coop.test.CoopCitus;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;

/** Small reads shared by the Citus fault tests: counts and placements, each with bound values. */
final class CitusFaults {
    private CitusFaults() {
    }

    /** The first column of the first row of {@code sql} (an int), its parameters bound in order. */
    static int count(DataSource dataSource, String sql, Object... values) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < values.length; i++) {
                ps.setObject(i + 1, values[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read " + sql, e);
        }
    }

    /** {@link #count(DataSource, String, Object...)} on a connection of the caller's. */
    static int count(Connection c, String sql) {
        try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read " + sql, e);
        }
    }

    /** The port of the worker holding a hierarchy's shard group, from the coordinator's metadata. */
    static int workerOf(DataSource dataSource, UUID root) {
        return count(dataSource, """
                SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
                 WHERE p.shardid = get_shard_id_for_distribution_column('coop.run', ?)""", root);
    }

    /** The SUSPENDED events of a root's step, read by root (routed to its worker alone). */
    static int suspended(DataSource dataSource, UUID root, String step) {
        return count(dataSource, "SELECT count(*)::int FROM coop.event WHERE root_id = ? AND type = 'SUSPENDED'"
                + " AND step = ?", root, step);
    }

    /** The shard of {@code coop.run} that holds a hierarchy (its group: every co-located table's rows of it). */
    static long shardOf(DataSource dataSource, UUID root) {
        return count(dataSource, "SELECT get_shard_id_for_distribution_column('coop.run', ?)::int", root);
    }

    /** Moves a shard group to another worker, blocking writes to it while it copies (the cluster has no logical WAL). */
    static void move(DataSource dataSource, long shard, int from, int to) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT citus_move_shard_placement(?, '127.0.0.1', ?, '127.0.0.1', ?,
                       shard_transfer_mode => 'block_writes')""")) {
            ps.setLong(1, shard);
            ps.setInt(2, from);
            ps.setInt(3, to);
            ps.execute();
        } catch (SQLException e) {
            throw new IllegalStateException("Could not move shard " + shard, e);
        }
    }

    /** Each worker's log size now, to read what it logged afterwards ({@link #deadlocks}). */
    static Map<Integer, Long> logSizes(CoopCitus cluster) {
        Map<Integer, Long> sizes = new java.util.LinkedHashMap<>();
        for (int port : cluster.ports().subList(1, cluster.ports().size())) {
            sizes.put(port, cluster.logFile(port).toFile().length());
        }
        return sizes;
    }

    /**
     * The deadlocks the workers logged since {@code from} ({@link #logSizes}): each {@code deadlock detected} and the
     * lines after it that name the processes and their statements; empty when there were none.
     */
    static String deadlocks(CoopCitus cluster, Map<Integer, Long> from) {
        StringBuilder out = new StringBuilder();
        from.forEach((port, size) -> {
            List<String> lines = logSince(cluster, port, size);
            for (int i = 0; i < lines.size(); i++) {
                if (lines.get(i).contains("deadlock detected")) {
                    out.append("worker ").append(port).append(":\n");
                    lines.subList(i, Math.min(lines.size(), i + 12)).forEach(l -> out.append("  ").append(l)
                            .append('\n'));
                }
            }
        });
        return out.toString();
    }

    private static List<String> logSince(CoopCitus cluster, int port, long from) {
        try (RandomAccessFile file = new RandomAccessFile(cluster.logFile(port).toFile(), "r")) {
            byte[] bytes = new byte[(int) Math.max(0, file.length() - from)];
            file.seek(from);
            file.readFully(bytes);
            return new String(bytes, StandardCharsets.UTF_8).lines().toList();
        } catch (IOException e) {
            return List.of("(could not read " + cluster.logFile(port) + ": " + e + ")");
        }
    }
}
