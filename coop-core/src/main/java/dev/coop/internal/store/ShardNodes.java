package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Which worker holds each shard of {@code run}, from the coordinator's metadata, so that the sharded claim knows
 * whether its next candidate is on the worker of the lock attempt that just failed ({@link ShardedClaims}). Read when
 * first needed, again when a shard is not in it (at most once a second), and when it is {@link #REFRESH_MILLIS} old.
 * A shard moved since it was read may make a claim go on in a transaction that holds a failed attempt on another
 * worker, once: what ending the attempts avoids (a connection to that worker in the step's transaction), never a lost
 * or doubled step. Thread-safe.
 */
final class ShardNodes {
    /** How long the map is used before it is read again. */
    static final long REFRESH_MILLIS = 10_000;
    /** How long a shard not in the map is not looked for again (a split shard, say; unknown, the attempts end). */
    static final long MISS_MILLIS = 1_000;

    /** Each shard of {@code run} with its worker as {@code host:port}. */
    private static final String PLACEMENTS = """
            SELECT s.shardid, n.nodename || ':' || n.nodeport FROM pg_dist_shard s
              JOIN pg_dist_placement p ON p.shardid = s.shardid
              JOIN pg_dist_node n ON n.groupid = p.groupid
             WHERE s.logicalrelid = to_regclass(?)
            """;

    private final String table;
    private volatile Map<Long, String> nodes = Map.of();
    private volatile long readAt = System.nanoTime() - TimeUnit.DAYS.toNanos(1);

    ShardNodes(SchemaName schema) {
        this.table = schema.value() + ".run";
    }

    /**
     * The worker of the shard a candidate came from, by the shard's name ({@code tableoid::regclass::text} of the
     * row, read on the worker: {@code run_102008}, schema-qualified or not); null when not known.
     */
    String of(Connection c, String shardName) throws SQLException {
        if (shardName == null) {
            return null;
        }
        long shard;
        try {
            shard = Long.parseLong(shardName.substring(shardName.lastIndexOf('_') + 1));
        } catch (NumberFormatException e) {
            return null;
        }
        String node = nodes.get(shard);
        long age = System.nanoTime() - readAt;
        if (age > TimeUnit.MILLISECONDS.toNanos(REFRESH_MILLIS)
                || node == null && age > TimeUnit.MILLISECONDS.toNanos(MISS_MILLIS)) {
            node = read(c).get(shard);
        }
        return node;
    }

    private Map<Long, String> read(Connection c) throws SQLException {
        Map<Long, String> read = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(PLACEMENTS)) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    read.put(rs.getLong(1), rs.getString(2));
                }
            }
        }
        nodes = Map.copyOf(read);
        readAt = System.nanoTime();
        return read;
    }
}
