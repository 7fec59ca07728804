package dev.coop.internal.store;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.UUID;

/**
 * The claim of one run of a saga without limits in two small statements instead of one big data-modifying CTE
 * (issue 37, decision 3): {@link ClaimSql#CLAIM_LOCK} locks the run by the claim index and returns its row, then one
 * statement chosen by that row completes it: {@link ClaimSql#CLAIMED_SEEN} for a run that has not started (its SEEN
 * and its message), {@link ClaimSql#CLAIMED_RECENT} or {@link ClaimSql#CLAIMED_ROLLBACK} for a started one (its
 * message and the step log). Each is a handful of plan nodes on few relations, where the one statement was some
 * thirty nodes on nine; the second statement's snapshot is taken after the lock, so it needs neither
 * {@code seen_missing} nor a second read of the log. A round and the reclaims by id keep the one statement
 * ({@link ClaimSql#CLAIM}): a round's two statements were measured slower than the one (2026-12-02).
 */
final class SplitClaim {
    private final String lockSql;
    private final String seenSql;
    private final String recentSql;
    private final String rollbackSql;
    private final ClaimRows rows;

    /**
     * @param lock {@link ClaimSql#CLAIM_LOCK} with its idle-in-transaction timeout set, before its schema and
     *        selection are filled in
     * @param selection the selection by saga and due time (parameters: saga, version, {now})
     */
    SplitClaim(SchemaName schema, String lock, String selection, ClaimRows rows) {
        this.lockSql = schema.sql(lock.formatted(selection));
        this.seenSql = schema.sql(ClaimSql.CLAIMED_SEEN);
        this.recentSql = schema.sql(ClaimSql.CLAIMED_RECENT);
        this.rollbackSql = schema.sql(ClaimSql.CLAIMED_ROLLBACK);
        this.rows = rows;
    }

    /** The locking statement, as sent. */
    String lockSql() {
        return lockSql;
    }

    /** Locks the due run of {@code version} of {@code saga} that comes first, and completes its claim; or null. */
    ClaimedRun claim(Connection c, String saga, int version, String engine, OffsetDateTime now) throws SQLException {
        ClaimedRun locked;
        try (PreparedStatement ps = c.prepareStatement(lockSql)) {
            ps.setObject(1, now);
            ps.setString(2, engine);
            ps.setString(3, saga);
            ps.setInt(4, version);
            ps.setObject(5, now);
            try (ResultSet rs = ps.executeQuery()) {
                locked = rs.next() ? locked(rs) : null;
            }
        }
        return locked == null ? null : complete(c, locked, engine);
    }

    /** The claim of {@code run}: its message, its SEEN or its step log, by a statement more; null without message. */
    private ClaimedRun complete(Connection c, ClaimedRun run, String engine) throws SQLException {
        return complete(c, run, engine, seenSql, false);
    }

    /**
     * {@link #complete(Connection, ClaimedRun, String)} with another SEEN statement: {@code seenByIndex} when it
     * writes the SEEN unless a unique index finds one, without a test of its own (two parameters fewer, the message and
     * the saga after the root: {@link ShardedClaims#CLAIMED_SEEN}).
     */
    ClaimedRun complete(Connection c, ClaimedRun run, String engine, String seen, boolean seenByIndex)
            throws SQLException {
        String sql = !run.started() ? seen : run.rollback() ? rollbackSql : recentSql;
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            int i = 0;
            if (!run.started()) {
                ps.setObject(++i, run.messageId());
                ps.setString(++i, run.saga());
                ps.setString(++i, engine);
                ps.setArray(++i, c.createArrayOf("uuid", run.lineage()));
                ps.setObject(++i, run.rootId());
            }
            if (run.started()) {
                ps.setObject(++i, run.rootId());
            }
            if (run.started() || !seenByIndex) { // the test for a SEEN, or the step log's
                ps.setObject(++i, run.messageId());
                ps.setString(++i, run.saga());
            }
            if (run.started() && run.rollback()) {
                ps.setObject(++i, run.rollbackSeq(), Types.INTEGER);
            } else if (run.started()) {
                ps.setInt(++i, run.stepsDone());
            }
            ps.setObject(++i, run.rootId());
            ps.setObject(++i, run.messageId());
            try (ResultSet m = ps.executeQuery()) {
                return m.next() ? completed(c, run, m) : null; // its message gone: as the one statement's join
            }
        }
    }

    /** {@code run} with its message and step history, as the current row of {@code m} completes it. */
    ClaimedRun completed(Connection c, ClaimedRun run, ResultSet m) throws SQLException {
        Array recentArray = m.getArray("recent");
        StepHistory history = rows.history(c, run.id(), run.stepsDone(), run.history().iterations(),
                run.rollback(), recentArray == null ? new int[0] : ClaimRows.ints(recentArray),
                m.getObject("recent_top", Integer.class), run.rollbackSeq(),
                m.getObject("rollback_instance", Integer.class), m.getObject("rollback_iteration", Integer.class));
        return new ClaimedRun(run.id(), run.saga(), run.sagaVersion(), run.messageId(), run.lineage(),
                run.parentId(), run.rollback(), run.stepIndex(), run.nextStep(), run.stepsDone(), history,
                run.attempt(), run.started(), run.failedChildren(), run.rollbackSeq(), run.rollbackStage(),
                run.rollbackCause(), run.resolution(), run.retries(), run.version(), run.context(),
                run.parentContext(), run.finallyDone(), run.pendingChildren(), run.awaited(), run.waitingSince(),
                run.cancellation(), m.getString("topic"), m.getString("payload"),
                m.getObject("created_at", OffsetDateTime.class), run.claimedAt(), run.xact(), run.runnableAt(),
                run.cancelFrom(), run.orderingKey());
    }

    /** The run in the current row of the locking statement: no message yet, its history only its iterations. */
    static ClaimedRun locked(ResultSet rs) throws SQLException {
        return locked(rs, rs.getString("xact"));
    }

    /** {@link #locked(ResultSet)} with the claim's transaction as {@code xact} names it, not as the row does. */
    static ClaimedRun locked(ResultSet rs, String xact) throws SQLException {
        StepHistory iterations = new StepHistory(ClaimRows.ints(rs.getArray("iterations")), new int[0], null, null);
        return new ClaimedRun(rs.getObject("id", UUID.class), rs.getString("saga"), rs.getInt("saga_version"),
                rs.getObject("message_id", UUID.class), (UUID[]) rs.getArray("lineage").getArray(),
                rs.getObject("parent_id", UUID.class), rs.getBoolean("rollback"), rs.getInt("step_index"),
                rs.getString("next_step"), rs.getInt("steps_done"), iterations, rs.getInt("attempt"),
                rs.getBoolean("started"), rs.getInt("failed_children"), rs.getObject("rollback_seq", Integer.class),
                rs.getString("rollback_stage"), rs.getString("rollback_cause"), rs.getString("resolution"),
                rs.getInt("retries"), rs.getInt("version"), rs.getString("context"), rs.getString("parent_context"),
                ClaimRows.ints(rs.getArray("finally_done")), rs.getInt("pending_children"), rs.getBoolean("awaited"),
                rs.getObject("waiting_since", OffsetDateTime.class), rs.getString("cancellation"), null, null, null,
                rs.getObject("claimed_at", OffsetDateTime.class), xact,
                rs.getObject("runnable_at", OffsetDateTime.class), rs.getObject("cancel_from", Integer.class),
                rs.getString("ordering_key"));
    }
}
