package dev.coop.internal.inspect;

import dev.coop.internal.store.SchemaName;

import dev.coop.MessageId;
import dev.coop.inspect.MessageMatch;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Finds messages by what an operator has at hand: a message id, or the idempotency key it was launched with. Each way
 * is one indexed statement; further keys (a business key of the outside world, say) are one more method here and one
 * more line in {@link #find}.
 */
public final class Search {
    /** Matches returned at most. */
    public static final int MAX = 100;

    private final SchemaName schema;

    public Search(SchemaName schema) {
        this.schema = schema;
    }

    /** The messages {@code text} names: as a message id, then as an idempotency key; newest first. */
    public List<MessageMatch> find(Connection c, String text) throws SQLException {
        List<MessageMatch> found = new ArrayList<>(byId(c, text));
        found.addAll(byIdempotencyKey(c, text));
        return found.size() > MAX ? found.subList(0, MAX) : found;
    }

    private List<MessageMatch> byId(Connection c, String text) throws SQLException {
        UUID id;
        try {
            id = UUID.fromString(text);
        } catch (IllegalArgumentException notAnId) {
            return List.of();
        }
        return read(c, "SELECT id, topic, created_at FROM {schema}.message WHERE id = ?", id, "message id");
    }

    /**
     * By idempotency key, whatever the topic: one probe of the key's index ({@code (topic, idempotency_key)}) per
     * topic a saga is registered for, so messages of topics nobody handles are not found this way.
     */
    private List<MessageMatch> byIdempotencyKey(Connection c, String key) throws SQLException {
        return read(c, """
                SELECT m.id, m.topic, m.created_at FROM {schema}.message m
                 WHERE m.topic IN (SELECT DISTINCT topic FROM {schema}.saga_registration) AND m.idempotency_key = ?
                 ORDER BY m.created_at DESC LIMIT %d
                """.formatted(MAX), key, "idempotency key");
    }

    private List<MessageMatch> read(Connection c, String sql, Object value, String matchedBy) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(sql))) {
            ps.setObject(1, value);
            List<MessageMatch> found = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    found.add(new MessageMatch(new MessageId(rs.getObject(1, UUID.class)), rs.getString(2),
                            rs.getObject(3, OffsetDateTime.class), matchedBy));
                }
            }
            return found;
        }
    }
}
