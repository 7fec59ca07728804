package dev.coop.internal.task;

import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Time;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * {@link TaskSql#OPEN} on Citus ({@link SchemaName#citus()}). The one statement inserts the messages, events and runs
 * by {@code INSERT ... SELECT} from its {@code unnest} input and the tasks into the coordinator's {@code external_task}
 * in CTEs of one statement: Citus ran it through the coordinator (its input sent to the workers as intermediate
 * results, the task's insert a local task of the plan), and a step that opened a task committed in two phases. Here
 * the tasks are inserted first, in a statement on the coordinator's table alone (a key an open task holds is not
 * taken, and the step fails before anything else is written), then the messages, the EMITTED events, the runs and
 * the events of tasks that took a kept signal, each an {@code INSERT ... VALUES} of bound rows routed to the
 * hierarchy's shard, ids from the coordinator's sequence in the one statement's order.
 */
final class RootOpening {
    /** The tasks (the coordinator); returns the keys taken. */
    static final String TASKS = """
            INSERT INTO {schema}.external_task (run_id, message_id, parent_id, parent_seq, root_id, name, token,
                                                task_key, compensation_topic, compensation_payload, deadline_at,
                                                timeout_at, created_at, state, settled_at, settled_by)
            SELECT rid, mid, ?::uuid, ?::int, ?::uuid, name, token, task_key, ctopic, cpayload,
                   CASE WHEN ?::timestamptz IS NULL OR timeout_at < ?::timestamptz THEN timeout_at
                        ELSE ?::timestamptz END,
                   timeout_at, {now}, CASE WHEN result IS NULL THEN 'OPEN' ELSE 'COMPLETED' END,
                   CASE WHEN result IS NOT NULL THEN {now} END, CASE WHEN result IS NOT NULL THEN 'signal' END
              FROM unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
                          ?::timestamptz[]) WITH ORDINALITY
                   AS u(mid, rid, name, token, task_key, ctopic, cpayload, result, timeout_at, n)
             ORDER BY n
            ON CONFLICT (task_key) WHERE state = 'OPEN' DO NOTHING
            RETURNING task_key
            """;

    /** The tasks' messages: id, topic, payload, created_at, root. */
    static final String MESSAGES = "INSERT INTO {schema}.message (id, topic, payload, created_at, root_id) VALUES %s";
    private static final String MESSAGE_ROW = "(?::uuid, ?, ?::jsonb, {now}, ?::uuid)";

    /** Their EMITTED events: message, saga, engine, step, lineage, context, root. */
    static final String EMITTED = "INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, context,"
            + " root_id) VALUES %s";
    private static final String EMITTED_ROW = "(?::uuid, 'EMITTED', ?, ?, ?, ?::uuid[], ?, ?::uuid)";

    /** Their runs, WAITING (COMMITTED when a kept signal completed the task). */
    static final String RUNS = """
            INSERT INTO {schema}.run (id, message_id, saga, lineage, parent_id, parent_seq, status, context,
                                      runnable_at, result, started_at, finished_at, cancel_from, root_id)
            VALUES %s
            """;
    private static final String RUN_ROW = "(?::uuid, ?::uuid, '~external-task', ?::uuid[], ?::uuid, ?::int, ?, ?,"
            + " {now}, ?, {now_if_done}, {now_if_done}, ?::int, ?::uuid)";

    /** SEEN and COMMITTED of a task a kept signal completed: message, type, lineage, root. */
    static final String TAKEN = "INSERT INTO {schema}.event (message_id, type, saga, lineage, root_id) VALUES %s";
    private static final String TAKEN_ROW = "(?::uuid, ?, '~external-task', ?::uuid[], ?::uuid)";

    private final SchemaName schema;
    private final Time time;

    RootOpening(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    private String sql(String into, String row, int rows) {
        return schema.sql(into.formatted(String.join(",\n       ", Collections.nCopies(rows, row))));
    }

    /** As {@link ExternalTasks#open}, after the signals were taken ({@code results}): the keys an open task held. */
    List<String> open(Connection c, ExternalTasks.Opener o, List<TaskRequest> tasks, String[] results)
            throws SQLException {
        OffsetDateTime now = time.bind();
        List<String> taken = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TASKS))) {
            int i = 0;
            ps.setObject(++i, o.run().id());
            ps.setInt(++i, o.seq());
            ps.setObject(++i, o.run().lineage()[0]);
            for (int k = 0; k < 3; k++) {
                ps.setObject(++i, o.deadline());
            }
            ps.setObject(++i, now);
            ps.setObject(++i, now);
            ps.setArray(++i, c.createArrayOf("uuid", tasks.stream().map(TaskRequest::messageId).toArray()));
            ps.setArray(++i, c.createArrayOf("uuid", tasks.stream().map(TaskRequest::runId).toArray()));
            ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::name).toArray()));
            ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::token).toArray()));
            ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::key).toArray()));
            ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::compensationTopic).toArray()));
            ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::compensationPayload).toArray()));
            ps.setArray(++i, c.createArrayOf("text", results));
            ps.setArray(++i, c.createArrayOf("timestamptz", tasks.stream().map(TaskRequest::timeoutAt).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    taken.add(rs.getString(1));
                }
            }
        }
        List<String> held = tasks.stream().map(TaskRequest::key)
                .filter(k -> k != null && !taken.contains(k)).toList();
        if (!held.isEmpty()) {
            return held;
        }
        messages(c, o, tasks, now);
        runs(c, o, tasks, results, now);
        signalled(c, o, tasks, results);
        return held;
    }

    private void messages(Connection c, ExternalTasks.Opener o, List<TaskRequest> tasks, OffsetDateTime now)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql(MESSAGES, MESSAGE_ROW, tasks.size()))) {
            int i = 0;
            for (TaskRequest t : tasks) {
                ps.setObject(++i, t.messageId(), Types.OTHER);
                ps.setString(++i, t.name());
                ps.setString(++i, t.payload());
                ps.setObject(++i, now);
                ps.setObject(++i, o.run().rootId(), Types.OTHER);
            }
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(sql(EMITTED, EMITTED_ROW, tasks.size()))) {
            var lineage = c.createArrayOf("uuid", o.run().lineage());
            int i = 0;
            for (TaskRequest t : tasks) {
                ps.setObject(++i, t.messageId(), Types.OTHER);
                ps.setString(++i, o.run().saga());
                ps.setString(++i, o.engine());
                ps.setString(++i, o.step());
                ps.setArray(++i, lineage);
                ps.setString(++i, o.context());
                ps.setObject(++i, o.run().rootId(), Types.OTHER);
            }
            ps.executeUpdate();
        }
    }

    private void runs(Connection c, ExternalTasks.Opener o, List<TaskRequest> tasks, String[] results,
            OffsetDateTime now) throws SQLException {
        String row = RUN_ROW.replace("{now_if_done}", "CASE WHEN ?::text IS NOT NULL THEN {now} END");
        try (PreparedStatement ps = c.prepareStatement(sql(RUNS, row, tasks.size()))) {
            int i = 0;
            for (int k = 0; k < tasks.size(); k++) {
                TaskRequest t = tasks.get(k);
                ps.setObject(++i, t.runId(), Types.OTHER);
                ps.setObject(++i, t.messageId(), Types.OTHER);
                ps.setArray(++i, c.createArrayOf("uuid", lineage(o, t)));
                ps.setObject(++i, o.run().id(), Types.OTHER);
                ps.setInt(++i, o.seq());
                ps.setString(++i, results[k] == null ? "WAITING" : "COMMITTED");
                ps.setString(++i, o.context());
                ps.setObject(++i, now);
                ps.setString(++i, results[k]);
                for (int d = 0; d < 2; d++) {
                    ps.setString(++i, results[k]);
                    ps.setObject(++i, now);
                }
                Store.setInteger(ps, ++i, o.run().childCancelFrom(false)); // as the opener's
                ps.setObject(++i, o.run().rootId(), Types.OTHER);
            }
            ps.executeUpdate();
        }
    }

    /** The SEEN and COMMITTED of each task a kept signal completed, in the tasks' order. */
    private void signalled(Connection c, ExternalTasks.Opener o, List<TaskRequest> tasks, String[] results)
            throws SQLException {
        List<TaskRequest> done = new ArrayList<>();
        for (int k = 0; k < tasks.size(); k++) {
            if (results[k] != null) {
                done.add(tasks.get(k));
            }
        }
        if (done.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(sql(TAKEN, TAKEN_ROW, 2 * done.size()))) {
            int i = 0;
            for (TaskRequest t : done) {
                var lineage = c.createArrayOf("uuid", lineage(o, t));
                for (String type : new String[]{"SEEN", "COMMITTED"}) {
                    ps.setObject(++i, t.messageId(), Types.OTHER);
                    ps.setString(++i, type);
                    ps.setArray(++i, lineage);
                    ps.setObject(++i, o.run().rootId(), Types.OTHER);
                }
            }
            ps.executeUpdate();
        }
    }

    /** The task's run's lineage: the opener's, then the run. */
    private static Object[] lineage(ExternalTasks.Opener o, TaskRequest t) {
        Object[] lineage = java.util.Arrays.copyOf(o.run().lineage(), o.run().lineage().length + 1, Object[].class);
        lineage[lineage.length - 1] = t.runId();
        return lineage;
    }
}
