package dev.coop.internal.store;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/**
 * Reads what a claim returns into a {@link ClaimedRun}: its row, its step history (read again where the claim's
 * snapshot may have missed it), and the result sets of the statements that end in a reclaim.
 */
final class ClaimRows {
    private final SchemaName schema;

    ClaimRows(SchemaName schema) {
        this.schema = schema;
    }

    ClaimedRun readClaim(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            return readClaim(ps.getConnection(), rs);
        }
    }

    ClaimedRun readClaim(Connection c, ResultSet rs) throws SQLException {
        if (!rs.next()) {
            return null;
        }
        StepHistory history = history(c, rs);
        return new ClaimedRun(rs.getObject("id", UUID.class), rs.getString("saga"), rs.getInt("saga_version"),
                rs.getObject("message_id", UUID.class), (UUID[]) rs.getArray("lineage").getArray(),
                rs.getObject("parent_id", UUID.class), rs.getBoolean("rollback"), rs.getInt("step_index"),
                rs.getString("next_step"),
                rs.getInt("steps_done"), history,
                rs.getInt("attempt"), rs.getBoolean("started"), rs.getInt("failed_children"),
                rs.getObject("rollback_seq", Integer.class), rs.getString("rollback_stage"),
                rs.getString("rollback_cause"), rs.getString("resolution"), rs.getInt("retries"),
                rs.getInt("version"), rs.getString("context"), rs.getString("parent_context"),
                ints(rs.getArray("finally_done")), rs.getInt("pending_children"), rs.getBoolean("awaited"),
                rs.getObject("waiting_since", OffsetDateTime.class), rs.getString("cancellation"),
                rs.getString("topic"), rs.getString("payload"),
                rs.getObject("message_created_at", OffsetDateTime.class),
                rs.getObject("claimed_at", OffsetDateTime.class), rs.getString("xact"),
                rs.getObject("runnable_at", OffsetDateTime.class), rs.getObject("cancel_from", Integer.class),
                rs.getString("ordering_key"));
    }

    /**
     * What the claim read of the run's step instances. The claim's snapshot can predate the commit of the run version
     * it locked (a transaction that committed between the statement's start and its lock); the instances that
     * transaction wrote are then missing, and are read again here with a new snapshot. The step log's rows never
     * change, so what was seen is right.
     */
    private StepHistory history(Connection c, ResultSet rs) throws SQLException {
        Array recentArray = rs.getArray("recent");
        return history(c, rs.getObject("id", UUID.class), rs.getInt("steps_done"), ints(rs.getArray("iterations")),
                rs.getBoolean("rollback"), recentArray == null ? new int[0] : ints(recentArray),
                rs.getObject("recent_top", Integer.class), rs.getObject("rollback_seq", Integer.class),
                rs.getObject("rollback_instance", Integer.class), rs.getObject("rollback_iteration", Integer.class));
    }

    /**
     * The history from what a claim read of the step log ({@code recent} newest first, {@code top} the newest seq
     * read; the instance at {@code rollbackSeq} on the rollback path), read again where it misses what the run's row
     * says was written.
     */
    StepHistory history(Connection c, UUID run, int stepsDone, int[] iterations, boolean rollback, int[] recent,
            Integer top, Integer rollbackSeq, Integer rollbackInstance, Integer rollbackIteration)
            throws SQLException {
        if (rollback) {
            if (rollbackSeq != null && rollbackSeq >= 0 && rollbackInstance == null) {
                try (PreparedStatement ps = c.prepareStatement(schema.sql(ClaimSql.INSTANCE_AT))) {
                    ps.setObject(1, run);
                    ps.setObject(2, run);
                    ps.setInt(3, rollbackSeq);
                    try (ResultSet again = ps.executeQuery()) {
                        if (again.next()) {
                            rollbackInstance = again.getInt(1);
                            rollbackIteration = again.getInt(2);
                        }
                    }
                }
            }
        } else if (stepsDone > 0 && (top == null || top != stepsDone - 1)) {
            recent = instancesBefore(c, schema, run, stepsDone, StepHistory.RECENT);
        }
        return new StepHistory(iterations, recent, rollbackInstance, rollbackIteration);
    }

    /**
     * The instances of {@code run} before {@code seq}, newest first, at most {@code limit}: for the rare walk back
     * past what the claim read ({@link StepHistory#recent()}).
     */
    public int[] instancesBefore(Connection c, UUID run, int seq, int limit) throws SQLException {
        return instancesBefore(c, schema, run, seq, limit);
    }

    private static int[] instancesBefore(Connection c, SchemaName schema, UUID run, int seq, int limit)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(ClaimSql.INSTANCES_BEFORE))) {
            ps.setObject(1, run);
            ps.setObject(2, run);
            ps.setInt(3, seq);
            ps.setInt(4, limit);
            List<Integer> instances = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    instances.add(rs.getInt(1));
                }
            }
            return instances.stream().mapToInt(Integer::intValue).toArray();
        }
    }

    static int[] ints(Array array) throws SQLException {
        return Arrays.stream((Integer[]) array.getArray()).mapToInt(Integer::intValue).toArray();
    }

    /**
     * Reads the results of advance; COMMIT[; BEGIN; reclaim], or of a waiting reclaim (its settings, the reclaim,
     * the settings again): the run in the second result set, or null.
     */
    ClaimedRun readCommitted(PreparedStatement ps) throws SQLException {
        return readCommitted(ps, rs -> readClaim(ps.getConnection(), rs));
    }

    /** What reads the claim's result set. */
    interface ClaimReader {
        ClaimedRun read(ResultSet rs) throws SQLException;
    }

    /**
     * The run as the slim reclaim of its continuation found it ({@link ClaimSql#RECLAIM_CONTINUATION}): its row as read
     * now; the message, lineage and parent as the previous claim read them (they never change); the history as the
     * previous claim read it plus the instance the advance wrote. Null when it was not locked.
     */
    static ClaimedRun continued(ResultSet rs, ClaimedRun run, Advance next) throws SQLException {
        if (!rs.next()) {
            return null;
        }
        int[] before = run.history().recent();
        int[] recent = new int[Math.min(StepHistory.RECENT, before.length + 1)];
        recent[0] = next.instance();
        System.arraycopy(before, 0, recent, 1, recent.length - 1);
        StepHistory history = new StepHistory(ints(rs.getArray(4)), recent, null, null);
        return new ClaimedRun(run.id(), run.saga(), run.sagaVersion(), run.messageId(), run.lineage(),
                run.parentId(), false, rs.getInt(1), rs.getString(2), rs.getInt(3), history, rs.getInt(5),
                rs.getBoolean(6), rs.getInt(7), rs.getObject(8, Integer.class), rs.getString(9), rs.getString(10),
                rs.getString(11), rs.getInt(12), rs.getInt(13), rs.getString(14), rs.getString(15),
                ints(rs.getArray(16)), rs.getInt(17), rs.getBoolean(18), rs.getObject(19, OffsetDateTime.class),
                rs.getString(22), run.topic(), run.payload(), run.messageCreatedAt(),
                rs.getObject(21, OffsetDateTime.class), rs.getString(23), rs.getObject(20, OffsetDateTime.class),
                run.cancelFrom(), run.orderingKey());
    }

    ClaimedRun readCommitted(PreparedStatement ps, ClaimReader reader) throws SQLException {
        ClaimedRun again = null;
        int resultSets = 0;
        boolean isResultSet = ps.execute();
        while (isResultSet || ps.getUpdateCount() != -1) {
            if (isResultSet) {
                try (ResultSet rs = ps.getResultSet()) {
                    if (++resultSets == 2) { // the first is the advance's (no parent: empty)
                        again = reader.read(rs);
                    }
                }
            }
            isResultSet = ps.getMoreResults();
        }
        return again;
    }
}
