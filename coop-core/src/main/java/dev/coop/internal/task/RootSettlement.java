package dev.coop.internal.task;

import dev.coop.RunStatus;
import dev.coop.TaskState;
import dev.coop.internal.store.Counted;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Time;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.UUID;

/**
 * A task's settlement on Citus ({@link SchemaName#citus()}), in the statements {@link TaskSql#SETTLE} is made of:
 * Citus refuses the one statement (its run is locked by id alone, and it writes the coordinator's
 * {@code external_task} and the hierarchy's shard together). Here the task's root is read first, on the coordinator
 * (with the hierarchy's operator lock, shared, in a statement without a distributed table: a coordinator lock, as the
 * operators' is on Citus); then the run is locked by {@code root_id = ?} (one shard), the task marked, the run settled
 * and its events written, each statement routed, and the parent counted off as a finishing child's is
 * ({@link Store#countOff}). The same order of locks as the one statement: the run's before the task's.
 */
final class RootSettlement {
    /** The task's run and root, after the hierarchy's operator lock (shared). {@code %s}: BY_TOKEN or BY_KEY. */
    static final String TARGET = """
            SELECT t.run_id, t.root_id, pg_advisory_xact_lock_shared(x'636f6f70'::int, hashtext(t.root_id::text))
              FROM {schema}.external_task t WHERE %s
            """;

    /** The task's run, locked while it still waits for the task (as TaskSql.SETTLE's {@code locked}). */
    static final String LOCK_RUN = """
            SELECT r.message_id, r.lineage, r.parent_id, r.cancel_from FROM {schema}.run r
             WHERE r.root_id = ? AND r.id = ? AND r.started_at IS NULL AND r.phase = 'HAPPY'
               AND r.status IN ('WAITING', 'RUNNABLE')
             FOR UPDATE
            """;

    /** The task, settled while open (local to the coordinator). */
    static final String TASK = """
            UPDATE {schema}.external_task t SET state = ?, settled_at = {now}, settled_by = ?
             WHERE t.run_id = ? AND t.state = 'OPEN'
            """;

    /** The run, settled. */
    static final String RUN = """
            UPDATE {schema}.run r
               SET status = ?, phase = ?, result = ?, failure = ?::jsonb, started_at = {now}, finished_at = {now},
                   version = r.version + 1
             WHERE r.root_id = ? AND r.id = ?
            """;

    /**
     * The run's events: {@code INSERT ... VALUES}, a row of bound values each ({@link #logged}). Citus takes their ids
     * from the coordinator's sequence in the rows' order, and routes the insert to the hierarchy's shard; an {@code
     * INSERT ... SELECT FROM unnest(...)} went through the coordinator and made the settlement commit in two phases.
     */
    private static final String LOGGED_INTO = """
            INSERT INTO {schema}.event (message_id, type, saga, lineage, exception, root_id)
            VALUES %s
            """;

    /** One event of {@link #logged}: the message, the type, the lineage, the failure, the root. */
    private static final String LOGGED_ROW = "(?::uuid, ?, '~external-task', ?::uuid[], ?::jsonb, ?::uuid)";

    /** {@link #LOGGED_INTO} of {@code events} rows. */
    static String logged(int events) {
        return LOGGED_INTO.formatted(String.join(",\n       ", java.util.Collections.nCopies(events, LOGGED_ROW)));
    }

    /** {@link #logged}: a completion's two events (as audited). */
    static final String LOGGED = logged(2);

    private final SchemaName schema;
    private final Time time;
    private final Store store;

    RootSettlement(SchemaName schema, Time time, Store store) {
        this.schema = schema;
        this.time = time;
        this.store = store;
    }

    /** As {@link ExternalTasks#settle}, in the caller's transaction. */
    ExternalTasks.Settled settle(Connection c, String tokenOrKey, boolean complete, String result, String failure,
            String actor) throws SQLException {
        ExternalTasks.Address address = ExternalTasks.address(tokenOrKey);
        UUID run;
        UUID root;
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TARGET.formatted(
                address.token() ? TaskSql.BY_TOKEN : TaskSql.BY_KEY)))) {
            ps.setString(1, address.value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new ExternalTasks.Settled(false, null, null);
                }
                run = rs.getObject(1, UUID.class);
                root = rs.getObject(2, UUID.class);
            }
        }
        UUID message;
        UUID[] lineage;
        UUID parent;
        Integer cancelFrom;
        try (PreparedStatement ps = c.prepareStatement(schema.sql(LOCK_RUN))) {
            ps.setObject(1, root);
            ps.setObject(2, run);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new ExternalTasks.Settled(false, null, null);
                }
                message = rs.getObject(1, UUID.class);
                lineage = Counted.lineage(rs, 2);
                parent = rs.getObject(3, UUID.class);
                cancelFrom = Counted.cancelFrom(rs, 4);
            }
        }
        OffsetDateTime now = time.bind();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TASK))) {
            ps.setString(1, complete ? TaskState.COMPLETED.name() : TaskState.FAILED.name());
            ps.setObject(2, now);
            ps.setString(3, actor);
            ps.setObject(4, run);
            if (ps.executeUpdate() == 0) {
                return new ExternalTasks.Settled(false, null, null);
            }
        }
        RunStatus status = complete ? RunStatus.COMMITTED : RunStatus.ROLLED_BACK;
        try (PreparedStatement ps = c.prepareStatement(schema.sql(RUN))) {
            ps.setString(1, status.name());
            ps.setString(2, complete ? "HAPPY" : "ROLLBACK");
            ps.setString(3, result);
            ps.setString(4, failure);
            ps.setObject(5, now);
            ps.setObject(6, now);
            ps.setObject(7, root);
            ps.setObject(8, run);
            ps.executeUpdate();
        }
        String[] types = complete // a run's log starts with SEEN
                ? new String[]{"SEEN", "COMMITTED"}
                : new String[]{"SEEN", "ROLLING_BACK", "ROLLED_BACK"};
        try (PreparedStatement ps = c.prepareStatement(schema.sql(logged(types.length)))) {
            var lineageArray = c.createArrayOf("uuid", lineage);
            int i = 0;
            for (String type : types) {
                ps.setObject(++i, message, Types.OTHER);
                ps.setString(++i, type);
                ps.setArray(++i, lineageArray);
                ps.setString(++i, type.equals("ROLLING_BACK") ? failure : null);
                ps.setObject(++i, root, Types.OTHER);
            }
            ps.executeUpdate();
        }
        Counted child = new Counted(run, TaskSql.SAGA, status, message, parent, root, lineage, cancelFrom);
        return new ExternalTasks.Settled(true, message, parent == null
                ? null
                : store.countOff(c, child, status, null, now));
    }
}
