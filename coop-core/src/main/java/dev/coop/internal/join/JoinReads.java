package dev.coop.internal.join;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import dev.coop.MessageId;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.Store;
import dev.coop.join.JoinId;
import dev.coop.join.JoinMemberState;
import dev.coop.join.JoinStatus;
import dev.coop.join.JoinView;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** Reads joins with their members: one by id, or the joins of a grouping key. */
final class JoinReads {
    private final Store store;
    private final Json json;

    JoinReads(Store store, Json json) {
        this.store = store;
        this.json = json;
    }

    private String sql(String template) {
        return store.schema().sql(template);
    }

    /** The join with its members, or a {@link dev.coop.failure.CoopValidationException} when there is none. */
    JoinView get(Connection c, JoinId join) throws SQLException {
        JoinView view = read(c, join.value());
        if (view == null) {
            throw JoinBook.noJoin(store, join);
        }
        return view;
    }

    /** Joins with this grouping key, newest first, with their members. */
    List<JoinView> byKey(Connection c, String key, int limit) throws SQLException {
        List<JoinView> views = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                sql(JoinSql.JOIN_COLUMNS + " WHERE grouping_key = ? ORDER BY created_at DESC, id DESC LIMIT ?"))) {
            ps.setString(1, key);
            ps.setInt(2, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    views.add(readJoin(rs));
                }
            }
        }
        if (views.isEmpty()) {
            return views;
        }
        Map<UUID, List<JoinView.Member>> members = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.MEMBERS_OF_JOINS))) {
            ps.setArray(1, c.createArrayOf("uuid", views.stream().map(v -> v.id().value()).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    members.computeIfAbsent(rs.getObject(6, UUID.class), k -> new ArrayList<>()).add(member(rs));
                }
            }
        }
        return views.stream().map(v -> withMembers(v, members.getOrDefault(v.id().value(), List.of()))).toList();
    }

    JoinView read(Connection c, UUID joinId) throws SQLException {
        JoinView join;
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.JOIN_COLUMNS + " WHERE id = ?"))) {
            ps.setObject(1, joinId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                join = readJoin(rs);
            }
        }
        return withMembers(join, members(c, joinId));
    }

    private static JoinView withMembers(JoinView v, List<JoinView.Member> members) {
        return new JoinView(v.id(), v.key(), v.status(), v.expected(), v.attached(), v.completed(), v.failed(),
                v.failIfAnyFailed(), v.metadata(), v.onCompleteTopic(), v.onFailTopic(), v.timeoutAt(),
                v.createdAt(), v.finishedAt(), v.outcomeMessage(), members);
    }

    private JoinView readJoin(ResultSet rs) throws SQLException {
        String metadata = rs.getString(9);
        JsonNode node;
        try {
            node = metadata == null ? NullNode.getInstance() : json.mapper().readTree(metadata);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("Stored join metadata is not JSON: " + e.getOriginalMessage(), e);
        }
        UUID outcome = rs.getObject(15, UUID.class);
        return new JoinView(new JoinId(rs.getObject(1, UUID.class)), rs.getString(2),
                JoinStatus.valueOf(rs.getString(3)), rs.getInt(4), rs.getInt(5), rs.getInt(6), rs.getInt(7),
                rs.getBoolean(8), node, rs.getString(10), rs.getString(11), rs.getObject(12, OffsetDateTime.class),
                rs.getObject(13, OffsetDateTime.class), rs.getObject(14, OffsetDateTime.class),
                outcome == null ? null : new MessageId(outcome), List.of());
    }

    private List<JoinView.Member> members(Connection c, UUID joinId) throws SQLException {
        List<JoinView.Member> members = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.MEMBERS))) {
            ps.setObject(1, joinId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    members.add(member(rs));
                }
            }
        }
        return members;
    }

    private static JoinView.Member member(ResultSet rs) throws SQLException {
        return new JoinView.Member(new MessageId(rs.getObject(1, UUID.class)),
                JoinMemberState.valueOf(rs.getString(2)), rs.getBoolean(3), rs.getObject(4, OffsetDateTime.class),
                rs.getObject(5, OffsetDateTime.class));
    }
}
