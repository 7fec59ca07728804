package dev.coop.internal.store;

import dev.coop.RunStatus;
import java.util.UUID;

/**
 * A parent counted off: whether it became runnable or committed (then count it off at its parent too, in the same
 * hierarchy: {@code rootId}; its {@code lineage} and {@code cancelFrom} name the scope of that parent whose
 * cancellation keeps it from committing there, {@link AdvanceSql#parentScope}).
 */
public record Counted(UUID id, String saga, RunStatus status, UUID messageId, UUID parentId, UUID rootId,
        UUID[] lineage, Integer cancelFrom) {
    /** The lineage of a counted parent at {@code column}, or null. */
    public static UUID[] lineage(java.sql.ResultSet rs, int column) throws java.sql.SQLException {
        java.sql.Array array = rs.getArray(column);
        return array == null ? null : (UUID[]) array.getArray();
    }

    /** {@code cancel_from} of a counted parent at {@code column}, or null. */
    public static Integer cancelFrom(java.sql.ResultSet rs, int column) throws java.sql.SQLException {
        int from = rs.getInt(column);
        return rs.wasNull() ? null : from;
    }
}
