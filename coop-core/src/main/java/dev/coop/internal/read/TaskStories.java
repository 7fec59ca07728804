package dev.coop.internal.read;

import dev.coop.ExternalTask;
import dev.coop.TaskState;
import dev.coop.inspect.TaskSummary;
import dev.coop.internal.store.SchemaName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The external tasks of a tree, by their runs: one statement by primary key over the tree's task runs, none when it
 * has none.
 */
final class TaskStories {
    private final SchemaName schema;

    TaskStories(SchemaName schema) {
        this.schema = schema;
    }

    Map<UUID, TaskSummary> read(Connection c, List<TreeRow> rows) throws SQLException {
        List<UUID> tasks = rows.stream().filter(r -> ExternalTask.SAGA.equals(r.saga())).map(TreeRow::id).toList();
        if (tasks.isEmpty()) {
            return Map.of();
        }
        Map<UUID, TaskSummary> stories = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT t.run_id, t.name, t.task_key, t.state, t.settled_by, t.created_at, t.settled_at
                  FROM {schema}.external_task t WHERE t.run_id = ANY(?)
                """))) {
            ps.setArray(1, c.createArrayOf("uuid", tasks.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    stories.put(rs.getObject(1, UUID.class), new TaskSummary(rs.getString(2), rs.getString(3),
                            TaskState.valueOf(rs.getString(4)), rs.getString(5),
                            rs.getObject(6, OffsetDateTime.class), rs.getObject(7, OffsetDateTime.class)));
                }
            }
        }
        return stories;
    }
}
