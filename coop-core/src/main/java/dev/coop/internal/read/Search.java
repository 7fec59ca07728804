package dev.coop.internal.read;

import dev.coop.internal.store.SchemaName;

import dev.coop.MessageId;
import dev.coop.inspect.MessageMatch;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Finds messages by what an operator has at hand: a message id, the idempotency key, business key or tag it was
 * launched with, or the key or token of an external task in its hierarchy. Each way is one indexed statement, newest
 * first and bounded; the matches of all ways are merged newest first, a message matched two ways listed once with
 * both. A page ends at {@code limit} matches; the next page is the matches launched before the last one's time.
 */
public final class Search {
    /** Matches returned at most. */
    public static final int MAX = 100;

    private final SchemaName schema;

    public Search(SchemaName schema) {
        this.schema = schema;
    }

    /** The messages {@code text} names, newest first, at most {@link #MAX}. */
    public List<MessageMatch> find(Connection c, String text) throws SQLException {
        return find(c, text, null, MAX);
    }

    /**
     * The messages {@code text} names launched before {@code before} (null: any time), newest first, at most
     * {@code limit}.
     */
    public List<MessageMatch> find(Connection c, String text, OffsetDateTime before, int limit) throws SQLException {
        Map<MessageId, MessageMatch> found = new LinkedHashMap<>();
        add(found, byId(c, text, before));
        add(found, read(c, """
                SELECT m.id, m.topic, m.created_at FROM {schema}.message m
                 WHERE m.topic IN (SELECT DISTINCT topic FROM {schema}.saga_registration) AND m.idempotency_key = ?
                """, text, before, limit, "idempotency key"));
        add(found, read(c, """
                SELECT m.id, m.topic, m.created_at FROM {schema}.message m WHERE m.business_key = ?
                """, text, before, limit, "business key"));
        add(found, read(c, """
                SELECT m.id, m.topic, m.created_at FROM {schema}.message m WHERE m.tags @> ARRAY[?::text]
                """, text, before, limit, "tag"));
        add(found, read(c, """
                SELECT DISTINCT m.id, m.topic, m.created_at FROM {schema}.external_task t
                  JOIN {schema}.message m ON m.id = t.root_id
                 WHERE t.task_key = ?
                """, text, before, limit, "task key"));
        add(found, read(c, """
                SELECT m.id, m.topic, m.created_at FROM {schema}.external_task t
                  JOIN {schema}.message m ON m.id = t.root_id
                 WHERE t.token = ?
                """, text, before, limit, "task token"));
        List<MessageMatch> all = new ArrayList<>(found.values());
        all.sort(Comparator.comparing(MessageMatch::launchedAt).reversed()
                .thenComparing(m -> m.messageId().toString()));
        return all.size() > limit ? List.copyOf(all.subList(0, limit)) : all;
    }

    private static void add(Map<MessageId, MessageMatch> found, List<MessageMatch> matches) {
        for (MessageMatch m : matches) {
            found.merge(m.messageId(), m, (a, b) -> new MessageMatch(a.messageId(), a.topic(), a.launchedAt(),
                    a.matchedBy() + ", " + b.matchedBy()));
        }
    }

    private List<MessageMatch> byId(Connection c, String text, OffsetDateTime before) throws SQLException {
        UUID id;
        try {
            id = UUID.fromString(text);
        } catch (IllegalArgumentException notAnId) {
            return List.of();
        }
        return read(c, "SELECT m.id, m.topic, m.created_at FROM {schema}.message m WHERE m.id = ?", id, before, 1,
                "message id");
    }

    /** One way of matching: {@code sql} selects (id, topic, created_at) of {@code m} for the one bound value. */
    private List<MessageMatch> read(Connection c, String sql, Object value, OffsetDateTime before, int limit,
            String matchedBy) throws SQLException {
        String page = sql.strip() + (before == null ? "" : " AND m.created_at < ?")
                + " ORDER BY m.created_at DESC LIMIT " + limit;
        try (PreparedStatement ps = c.prepareStatement(schema.sql(page))) {
            ps.setObject(1, value);
            if (before != null) {
                ps.setObject(2, before);
            }
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
