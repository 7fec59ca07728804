package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * Idempotency keys on Citus (schema version 31): the coordinator's {@code launch_key} holds each (topic, key), since
 * the message's unique index is enforced per shard only. A keyed launch inserts its keys there first, in its own
 * transaction ({@code ON CONFLICT DO NOTHING} waits for a launch of the same key in flight, then skips it), and writes
 * only the messages whose key it got. The key and the message commit together: the coordinator's row and the
 * worker's, so Citus commits such a launch in two phases. Retention deletes the keys with their hierarchy.
 */
final class LaunchKeys {
    private final String takeSql;
    private final String holderSql;

    LaunchKeys(SchemaName schema) {
        this.takeSql = schema.sql("""
                INSERT INTO {schema}.launch_key (topic, idempotency_key, message_id, root_id)
                SELECT * FROM unnest(?::text[], ?::text[], ?::uuid[], ?::uuid[]) ORDER BY 1, 2
                ON CONFLICT (topic, idempotency_key) DO NOTHING
                RETURNING message_id
                """);
        this.holderSql = schema
                .sql("SELECT message_id FROM {schema}.launch_key WHERE topic = ? AND idempotency_key = ?");
    }

    /**
     * Takes the keys of {@code emissions} launched from {@code origin}; returns the ordinals of the emissions whose
     * key another message holds (they must not be written).
     */
    List<Integer> take(Connection c, Emits.Origin origin, List<Emission> emissions) throws SQLException {
        List<Emission> keyed = emissions.stream().filter(e -> e.idempotencyKey() != null).toList();
        Set<UUID> got = new HashSet<>();
        try (PreparedStatement ps = c.prepareStatement(takeSql)) {
            ps.setArray(1, c.createArrayOf("text", keyed.stream().map(Emission::topic).toArray()));
            ps.setArray(2, c.createArrayOf("text", keyed.stream().map(Emission::idempotencyKey).toArray()));
            ps.setArray(3, c.createArrayOf("uuid", keyed.stream().map(Emission::messageId).toArray()));
            ps.setArray(4, c.createArrayOf("uuid", keyed.stream().map(e -> origin.root(e.messageId())).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    got.add(rs.getObject(1, UUID.class));
                }
            }
        }
        List<Integer> taken = new ArrayList<>();
        for (int i = 0; i < emissions.size(); i++) {
            Emission e = emissions.get(i);
            if (e.idempotencyKey() != null && !got.contains(e.messageId())) {
                taken.add(i);
            }
        }
        return taken;
    }

    /** The message holding an idempotency key on a topic, or null. */
    UUID holder(Connection c, String topic, String idempotencyKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(holderSql)) {
            ps.setString(1, topic);
            ps.setString(2, idempotencyKey);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getObject(1, UUID.class) : null;
            }
        }
    }
}
