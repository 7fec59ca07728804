package dev.coop.internal.task;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * {@link TaskCompensations#COMPENSATE} and {@link TaskCompensations#SETTLE} on Citus ({@link SchemaName#citus()}), in
 * statements that each touch the coordinator's {@code external_task} or the hierarchy's shard, never both. The one
 * statements read and wrote both: Citus ran the task's update as a local task of a distributed plan, and the runs'
 * update, by id alone, on every shard, so the rollback that reached a task committed in two phases on both workers;
 * the settlement read every shard's {@code run} whole (its join by {@code message_id}). Here the tasks are locked and
 * marked on the coordinator (a statement PostgreSQL runs alone), their runs settled by {@code root_id = ?} (the
 * task's run and its compensation's runs are in the rolling-back run's hierarchy), their events written from bound
 * values ({@code INSERT ... VALUES}), in the one statement's order.
 */
final class RootCompensations {
    /** The instance's completed tasks, locked and marked (the coordinator's table alone), with their root. */
    static final String TASKS = """
            WITH done AS (
              SELECT t.run_id FROM {schema}.external_task t
               WHERE t.parent_id = ? AND t.parent_seq = ? AND t.state = 'COMPLETED'
               ORDER BY t.run_id
               FOR UPDATE
            )
            UPDATE {schema}.external_task t
               SET state = CASE WHEN t.compensation_topic IS NULL THEN 'COMPENSATED' ELSE 'COMPENSATING' END,
                   settled_at = {now}
              FROM done WHERE t.run_id = done.run_id
            RETURNING t.run_id, t.name, t.compensation_topic, t.compensation_payload
            """;

    /**
     * Whether the instance has completed tasks, read first without a lock: {@code external_task} is a Citus local
     * table, and a write to it, even one that changes no row, makes the rollback's transaction two-phase.
     */
    static final String ANY_COMPLETED = """
            SELECT EXISTS (SELECT 1 FROM {schema}.external_task t
                            WHERE t.parent_id = ? AND t.parent_seq = ? AND t.state = 'COMPLETED')
            """;

    /** Their runs, rolled back (one shard), in id order. */
    static final String RUNS = """
            UPDATE {schema}.run r SET status = 'ROLLED_BACK', phase = 'ROLLBACK', failure = ?::jsonb,
                                      finished_at = {now}, version = r.version + 1
             WHERE r.root_id = ? AND r.id = ANY(?::uuid[])
            RETURNING r.id, r.message_id, r.lineage
            """;

    private static final String LOGGED_INTO = """
            INSERT INTO {schema}.event (message_id, type, saga, engine, lineage, exception, root_id)
            VALUES %s
            """;

    private static final String LOGGED_ROW = "(?::uuid, ?, '~external-task', ?, ?::uuid[], ?::jsonb, ?::uuid)";

    /** The runs' events, ROLLING_BACK (with the cause) and ROLLED_BACK for each of {@code runs} runs. */
    static String logged(int runs) {
        return LOGGED_INTO.formatted(String.join(",\n       ", java.util.Collections.nCopies(2 * runs, LOGGED_ROW)));
    }

    /** {@link #logged}: one run's two events (as audited). */
    static final String LOGGED = logged(1);

    /** The instance's COMPENSATING tasks and the message each compensation was launched as (the coordinator). */
    static final String COMPENSATING = """
            SELECT t.run_id, t.name, t.compensation_topic, t.compensation_message_id, t.root_id
              FROM {schema}.external_task t
             WHERE t.parent_id = ? AND t.parent_seq = ? AND t.state = 'COMPENSATING'
             ORDER BY t.run_id
            """;

    /** The runs of those messages, by their root (one shard). */
    static final String OUTCOMES = """
            SELECT r.message_id, r.saga, r.status, r.failure::text FROM {schema}.run r
             WHERE r.root_id = ? AND r.message_id = ANY(?::uuid[])
             ORDER BY r.saga
            """;

    /** The tasks whose compensation finished, settled (the coordinator). */
    static final String SETTLED = """
            UPDATE {schema}.external_task t SET state = u.state, settled_at = {now}
              FROM unnest(?::uuid[], ?::text[]) AS u(run_id, state)
             WHERE t.run_id = u.run_id AND t.state = 'COMPENSATING'
            """;

    private final SchemaName schema;
    private final Time time;

    RootCompensations(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    /** As {@link TaskCompensations#compensate}. */
    List<TaskCompensations.Compensation> compensate(Connection c, ClaimedRun run, int seq, String engine,
            String cause) throws SQLException {
        OffsetDateTime now = time.bind();
        List<TaskCompensations.Compensation> found = new ArrayList<>();
        if (!anyCompleted(c, run.id(), seq)) {
            return found;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TASKS))) {
            ps.setObject(1, run.id());
            ps.setInt(2, seq);
            ps.setObject(3, now);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    found.add(new TaskCompensations.Compensation(rs.getObject(1, UUID.class), rs.getString(2),
                            rs.getString(3), rs.getString(4)));
                }
            }
        }
        if (found.isEmpty()) {
            return found;
        }
        found.sort(java.util.Comparator.comparing(t -> t.taskRun().toString())); // PostgreSQL's order of UUIDs
        log(c, run.rootId(), engine, cause, rolledBack(c, run.rootId(), now, cause, found));
        return found;
    }

    private boolean anyCompleted(Connection c, UUID runId, int seq) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(ANY_COMPLETED))) {
            ps.setObject(1, runId);
            ps.setInt(2, seq);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** The tasks' runs rolled back: id to message and lineage, in id order (as the one statement logged them). */
    private Map<UUID, Object[]> rolledBack(Connection c, UUID root, OffsetDateTime now, String cause,
            List<TaskCompensations.Compensation> tasks) throws SQLException {
        Map<UUID, Object[]> runs = new TreeMap<>(java.util.Comparator.comparing(UUID::toString)); // SQL's order
        try (PreparedStatement ps = c.prepareStatement(schema.sql(RUNS))) {
            ps.setString(1, cause);
            ps.setObject(2, now);
            ps.setObject(3, root);
            ps.setArray(4, c.createArrayOf("uuid", tasks.stream().map(TaskCompensations.Compensation::taskRun)
                    .toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    runs.put(rs.getObject(1, UUID.class), new Object[]{rs.getObject(2, UUID.class),
                            rs.getArray(3).getArray()});
                }
            }
        }
        return runs;
    }

    private void log(Connection c, UUID root, String engine, String cause, Map<UUID, Object[]> runs)
            throws SQLException {
        if (runs.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(logged(runs.size())))) {
            int i = 0;
            for (Object[] r : runs.values()) {
                for (String type : new String[]{"ROLLING_BACK", "ROLLED_BACK"}) {
                    ps.setObject(++i, r[0], Types.OTHER);
                    ps.setString(++i, type);
                    ps.setString(++i, engine);
                    ps.setArray(++i, c.createArrayOf("uuid", (Object[]) r[1]));
                    ps.setString(++i, type.equals("ROLLING_BACK") ? cause : null);
                    ps.setObject(++i, root, Types.OTHER);
                }
            }
            ps.executeUpdate();
        }
    }

    /** A COMPENSATING task as {@link #COMPENSATING} reads it. */
    private record Compensating(UUID run, String name, String topic, UUID message, UUID root) {
    }

    /** As {@link TaskCompensations#settle}. */
    List<TaskCompensations.Failed> settle(Connection c, UUID runId, int seq) throws SQLException {
        List<Compensating> tasks = compensating(c, runId, seq);
        if (tasks.isEmpty()) {
            return List.of();
        }
        Map<UUID, List<String[]>> outcomes = outcomes(c, tasks);
        List<UUID> settled = new ArrayList<>();
        List<String> states = new ArrayList<>();
        List<TaskCompensations.Failed> failed = new ArrayList<>();
        for (Compensating task : tasks) {
            List<String[]> runs = outcomes.getOrDefault(task.message(), List.of());
            if (runs.stream().anyMatch(r -> !List.of("COMMITTED", "ROLLED_BACK", "ROLLBACK_FAILED").contains(r[1]))) {
                continue; // still running
            }
            List<String[]> notCommitted = runs.stream().filter(r -> !r[1].equals("COMMITTED")).toList();
            settled.add(task.run());
            states.add(notCommitted.isEmpty() ? "COMPENSATED" : "COMPENSATION_FAILED");
            if (!notCommitted.isEmpty()) {
                failed.add(new TaskCompensations.Failed(task.name(), task.topic(),
                        String.join(", ", notCommitted.stream().map(r -> r[0] + " " + r[1]).toList()),
                        notCommitted.stream().filter(r -> r[1].equals("ROLLED_BACK") && r[2] != null)
                                .map(r -> TaskCompensations.normalised(r[2])).toList()));
            }
        }
        if (!settled.isEmpty()) {
            try (PreparedStatement ps = c.prepareStatement(schema.sql(SETTLED))) {
                ps.setObject(1, time.bind());
                ps.setArray(2, c.createArrayOf("uuid", settled.toArray()));
                ps.setArray(3, c.createArrayOf("text", states.toArray()));
                ps.executeUpdate();
            }
        }
        return failed;
    }

    private List<Compensating> compensating(Connection c, UUID runId, int seq) throws SQLException {
        List<Compensating> tasks = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(COMPENSATING))) {
            ps.setObject(1, runId);
            ps.setInt(2, seq);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    tasks.add(new Compensating(rs.getObject(1, UUID.class), rs.getString(2), rs.getString(3),
                            rs.getObject(4, UUID.class), rs.getObject(5, UUID.class)));
                }
            }
        }
        return tasks;
    }

    /** Each compensation message's runs (saga, status, failure), in saga order, read by the tasks' root. */
    private Map<UUID, List<String[]>> outcomes(Connection c, List<Compensating> tasks) throws SQLException {
        Map<UUID, List<UUID>> byRoot = new LinkedHashMap<>();
        for (Compensating task : tasks) {
            if (task.message() != null) {
                byRoot.computeIfAbsent(task.root(), k -> new ArrayList<>()).add(task.message());
            }
        }
        Map<UUID, List<String[]>> outcomes = new java.util.HashMap<>();
        for (Map.Entry<UUID, List<UUID>> root : byRoot.entrySet()) {
            try (PreparedStatement ps = c.prepareStatement(schema.sql(OUTCOMES))) {
                ps.setObject(1, root.getKey());
                ps.setArray(2, c.createArrayOf("uuid", root.getValue().toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        outcomes.computeIfAbsent(rs.getObject(1, UUID.class), k -> new ArrayList<>())
                                .add(new String[]{rs.getString(2), rs.getString(3), rs.getString(4)});
                    }
                }
            }
        }
        return outcomes;
    }
}
