package dev.coop.internal.read;

import dev.coop.inspect.StepView;
import dev.coop.internal.store.LogNames;
import dev.coop.internal.store.SchemaName;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which steps of the tree's saga versions run code of theirs when rolled back (a compensation or a finally part), as
 * their engines registered them ({@code saga_version.compensating_steps}). The log has a {@code Rollback of <step>}
 * transaction for every executed instance, also of a step that declares no compensation; trees leave those out.
 * Versions registered before schema version 25 are not known: their rows stay.
 */
final class CompensatingSteps {
    static final CompensatingSteps UNKNOWN = new CompensatingSteps(Map.of());

    private final Map<String, Set<String>> byVersion;

    private CompensatingSteps(Map<String, Set<String>> byVersion) {
        this.byVersion = byVersion;
    }

    /** The registered compensating steps of the sagas of {@code rows}. */
    static CompensatingSteps of(Connection c, SchemaName schema, List<TreeRow> rows) throws SQLException {
        String[] sagas = rows.stream().map(TreeRow::saga).distinct().toArray(String[]::new);
        Map<String, Set<String>> byVersion = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT saga, version, compensating_steps FROM {schema}.saga_version
                 WHERE saga = ANY (?) AND compensating_steps IS NOT NULL
                """))) {
            ps.setArray(1, c.createArrayOf("text", sagas));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Array steps = rs.getArray(3);
                    byVersion.put(key(rs.getString(1), rs.getInt(2)), Set.of((String[]) steps.getArray()));
                }
            }
        }
        return new CompensatingSteps(byVersion);
    }

    /**
     * False for the rollback transaction of a step that declares neither a compensation nor a finally part, which
     * ran no code, failed with nothing and launched nothing; true for every other step, and when not known.
     */
    boolean shows(String saga, int version, StepView s) {
        Set<String> compensating = byVersion.get(key(saga, version));
        if (compensating == null || s.kind() != StepView.Kind.COMPENSATION || s.failure() != null
                || s.launchedCount() > 0) {
            return true;
        }
        return compensating.contains(stepOf(s.name()));
    }

    /** The step's own name in {@code Rollback of <x>}, without the marks of its instance. */
    private static String stepOf(String name) {
        String s = name.startsWith(LogNames.ROLLBACK_PREFIX) ? name.substring(LogNames.ROLLBACK_PREFIX.length()) : name;
        for (String suffix : new String[]{LogNames.HANDLER_SUFFIX, LogNames.FINALLY_SUFFIX}) {
            if (s.endsWith(suffix)) {
                s = s.substring(0, s.length() - suffix.length());
            }
        }
        return s;
    }

    private static String key(String saga, int version) {
        return saga + '\n' + version;
    }
}
