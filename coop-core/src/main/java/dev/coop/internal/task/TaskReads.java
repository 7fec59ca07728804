package dev.coop.internal.task;

import dev.coop.MessageId;
import dev.coop.TaskState;
import dev.coop.failure.Failure;
import dev.coop.inspect.OpenTaskCount;
import dev.coop.inspect.TaskView;
import dev.coop.internal.store.SchemaName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/** Reads external tasks: one by token or key, the open ones, and how many are open by name. */
public final class TaskReads {
    /**
     * On Citus, the task's run and message are joined by the task's root as well: Citus plans a join of the
     * distributed {@code run} and {@code message} only on their distribution column (the coordinator's
     * {@code external_task} is read first, and its rows sent to each shard).
     */
    private static final String[] BY_ROOT = {"JOIN {schema}.run r ON r.id = t.run_id",
            "JOIN {schema}.run r ON r.root_id = t.root_id AND r.id = t.run_id",
            "JOIN {schema}.message m ON m.id = t.message_id",
            "JOIN {schema}.message m ON m.root_id = r.root_id AND m.id = t.message_id"};
    static final String FIND_BY_ROOT = dev.coop.internal.store.CitusLayout.rewritten(TaskSql.FIND, BY_ROOT);
    static final String LIST_OPEN_BY_ROOT = dev.coop.internal.store.CitusLayout.rewritten(TaskSql.LIST_OPEN,
            BY_ROOT);

    private final SchemaName schema;

    public TaskReads(SchemaName schema) {
        this.schema = schema;
    }

    /** The task a token names, or the open task (else the latest) holding a key. */
    public Optional<TaskView> find(Connection c, String tokenOrKey) throws SQLException {
        ExternalTasks.Address address = ExternalTasks.address(tokenOrKey);
        String sql = (schema.citus() ? FIND_BY_ROOT : TaskSql.FIND)
                .formatted(address.token() ? "t.token = ?" : "t.task_key = ?");
        try (PreparedStatement ps = c.prepareStatement(schema.sql(sql))) {
            ps.setString(1, address.value());
            List<TaskView> found = read(ps);
            return found.stream().findFirst();
        }
    }

    /** Open tasks, oldest first, of one name (null: all). */
    public List<TaskView> openTasks(Connection c, String name, int limit) throws SQLException {
        try (PreparedStatement ps = c
                .prepareStatement(schema.sql(schema.citus() ? LIST_OPEN_BY_ROOT : TaskSql.LIST_OPEN))) {
            ps.setString(1, name);
            ps.setString(2, name);
            ps.setInt(3, limit);
            return read(ps);
        }
    }

    /** Open tasks by name, with the oldest's creation time. */
    public List<OpenTaskCount> countOpen(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TaskSql.COUNT_OPEN));
                ResultSet rs = ps.executeQuery()) {
            List<OpenTaskCount> counts = new ArrayList<>();
            while (rs.next()) {
                counts.add(new OpenTaskCount(rs.getString(1), rs.getLong(2),
                        rs.getObject(3, OffsetDateTime.class).toInstant()));
            }
            return counts;
        }
    }

    private static List<TaskView> read(PreparedStatement ps) throws SQLException {
        List<TaskView> tasks = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                String failure = rs.getString(10);
                tasks.add(new TaskView(rs.getObject(1, UUID.class), new MessageId(rs.getObject(2, UUID.class)),
                        Arrays.asList((UUID[]) rs.getArray(3).getArray()), rs.getString(4), rs.getString(5),
                        Optional.ofNullable(rs.getString(6)), TaskState.valueOf(rs.getString(7)), rs.getString(8),
                        Optional.ofNullable(rs.getString(9)),
                        Optional.ofNullable(failure).map(f -> Failure.fromJson(f).message()),
                        rs.getObject(11, OffsetDateTime.class).toInstant(),
                        Optional.ofNullable(rs.getObject(12, OffsetDateTime.class)).map(OffsetDateTime::toInstant),
                        Optional.ofNullable(rs.getObject(13, OffsetDateTime.class)).map(OffsetDateTime::toInstant),
                        Optional.ofNullable(rs.getString(14))));
            }
        }
        return tasks;
    }
}
