package dev.coop;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
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
}
