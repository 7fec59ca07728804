package dev.coop.internal.operate;

import dev.coop.internal.store.SchemaName;

import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.inspect.AuditEntry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/** The SQL of the {@code audit} table: operators' actions, who, when and why. */
public final class AuditLog {
    private final SchemaName schema;

    public AuditLog(SchemaName schema) {
        this.schema = schema;
    }

    public AuditEntry record(Connection c, MessageId message, Lineage scope, String action, String actor,
            String reason, String outcome) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                INSERT INTO {schema}.audit (message_id, lineage, action, actor, reason, outcome)
                VALUES (?, ?, ?, ?, ?, ?) RETURNING id, created_at
                """))) {
            ps.setObject(1, message.value());
            ps.setArray(2, scope == null ? null : c.createArrayOf("uuid", scope.ids().toArray()));
            ps.setString(3, action);
            ps.setString(4, actor);
            ps.setString(5, reason);
            ps.setString(6, outcome);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new AuditEntry(rs.getLong(1), message, scope, action, actor, reason, outcome,
                        rs.getObject(2, OffsetDateTime.class));
            }
        }
    }

    /** The entries of one hierarchy, oldest first, at most {@code limit}. */
    public List<AuditEntry> list(Connection c, MessageId message, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT id, lineage, action, actor, reason, outcome, created_at FROM {schema}.audit
                 WHERE message_id = ? ORDER BY id LIMIT ?
                """))) {
            ps.setObject(1, message.value());
            ps.setInt(2, limit);
            List<AuditEntry> entries = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    java.sql.Array lineage = rs.getArray(2);
                    Lineage scope = lineage == null
                            ? null
                            : new Lineage(Arrays.asList((UUID[]) lineage.getArray()));
                    entries.add(new AuditEntry(rs.getLong(1), message, scope, rs.getString(3), rs.getString(4),
                            rs.getString(5), rs.getString(6), rs.getObject(7, OffsetDateTime.class)));
                }
            }
            return entries;
        }
    }
}
