package dev.coop.internal.store;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The claim of one run of a saga without limits in two small statements instead of one big data-modifying CTE
 * (issue 37, decision 3): {@link ClaimSql#CLAIM_LOCK} locks the run by the claim index and returns its row, then one
 * statement chosen by that row completes it: {@link ClaimSql#CLAIMED_SEEN} for a run that has not started (its SEEN
 * and its message), {@link ClaimSql#CLAIMED_RECENT} or {@link ClaimSql#CLAIMED_ROLLBACK} for a started one (its
 * message and the step log). Each is a handful of plan nodes on few relations, where the one statement was some
 * thirty nodes on nine; the second statement's snapshot is taken after the lock, so it needs neither
 * {@code seen_missing} nor a second read of the log. A round and the reclaims by id keep the one statement
 * ({@link ClaimSql#CLAIM}): a round's second statements would be one per run.
 */
final class SplitClaim {
    private final String lockSql;
    /** {@link #lockSql} of a round: {@code LIMIT ?}. */
    private final String roundLockSql;
    private final String roundSql;
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
        this.roundLockSql = lockSql.replaceFirst("LIMIT 1(\\s+)FOR UPDATE SKIP LOCKED",
                "LIMIT ?$1FOR UPDATE SKIP LOCKED");
        if (roundLockSql.equals(lockSql)) {
            throw new IllegalStateException("the claim's lock no longer ends in LIMIT 1 FOR UPDATE SKIP LOCKED");
        }
        this.roundSql = schema.sql(ClaimSql.CLAIMED_ROUND);
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
        List<ClaimedRun> locked = lock(c, lockSql, saga, version, engine, now, 1);
        return locked.isEmpty() ? null : complete(c, locked.get(0), engine);
    }

    /**
     * Locks up to {@code max} due runs of {@code version} of {@code saga}, the ones due first, and completes their
     * claims: one run as {@link #claim} does, several by {@link ClaimSql#CLAIMED_ROUND}. Two statements either way.
     */
    List<ClaimedRun> claimRound(Connection c, String saga, int version, String engine, OffsetDateTime now, int max)
            throws SQLException {
        List<ClaimedRun> locked = lock(c, roundLockSql, saga, version, engine, now, max);
        if (locked.size() <= 1) {
            ClaimedRun run = locked.isEmpty() ? null : complete(c, locked.get(0), engine);
            return run == null ? List.of() : List.of(run);
        }
        return completeRound(c, locked, saga, engine);
    }

    /** The runs {@code sql} locked, their message and step history not read yet. */
    private static List<ClaimedRun> lock(Connection c, String sql, String saga, int version, String engine,
            OffsetDateTime now, int max) throws SQLException {
        List<ClaimedRun> locked = new ArrayList<>(max);
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setObject(1, now);
            ps.setString(2, engine);
            ps.setString(3, saga);
            ps.setInt(4, version);
            ps.setObject(5, now);
            if (max > 1) {
                ps.setInt(6, max);
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    locked.add(locked(rs));
                }
            }
        }
        return locked;
    }

    /** The claim of {@code run}: its message, its SEEN or its step log, by a statement more; null without message. */
    private ClaimedRun complete(Connection c, ClaimedRun run, String engine) throws SQLException {
        return complete(c, run, engine, seenSql, false);
    }

    /**
     * {@link #complete(Connection, ClaimedRun, String)} with another SEEN statement: {@code seenNamesRoot} when it
     * also names the root in its test for an existing SEEN (one parameter more, after the saga: {@link ShardedClaims}).
     */
    ClaimedRun complete(Connection c, ClaimedRun run, String engine, String seen, boolean seenNamesRoot)
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
            ps.setObject(++i, run.messageId());
            ps.setString(++i, run.saga());
            if (!run.started()) {
                if (seenNamesRoot) {
                    ps.setObject(++i, run.rootId());
                }
            } else if (run.rollback()) {
                ps.setObject(++i, run.rollbackSeq(), Types.INTEGER);
            } else {
                ps.setInt(++i, run.stepsDone());
            }
            ps.setObject(++i, run.rootId());
            ps.setObject(++i, run.messageId());
            try (ResultSet m = ps.executeQuery()) {
                return m.next() ? completed(c, run, m) : null; // its message gone: as the one statement's join
            }
        }
    }

    private List<ClaimedRun> completeRound(Connection c, List<ClaimedRun> locked, String saga, String engine)
            throws SQLException {
        int n = locked.size();
        Object[] roots = new Object[n];
        Object[] messages = new Object[n];
        Object[] started = new Object[n];
        Object[] rollback = new Object[n];
        Object[] stepsDone = new Object[n];
        Object[] rollbackSeqs = new Object[n];
        Object[] lineages = new Object[n];
        for (int k = 0; k < n; k++) {
            ClaimedRun run = locked.get(k);
            roots[k] = run.rootId();
            messages[k] = run.messageId();
            started[k] = run.started();
            rollback[k] = run.rollback();
            stepsDone[k] = run.stepsDone();
            rollbackSeqs[k] = run.rollbackSeq();
            lineages[k] = lineage(run.lineage());
        }
        ClaimedRun[] claimed = new ClaimedRun[n];
        try (PreparedStatement ps = c.prepareStatement(roundSql)) {
            ps.setArray(1, c.createArrayOf("uuid", roots));
            ps.setArray(2, c.createArrayOf("uuid", messages));
            ps.setArray(3, c.createArrayOf("boolean", started));
            ps.setArray(4, c.createArrayOf("boolean", rollback));
            ps.setArray(5, c.createArrayOf("integer", stepsDone));
            ps.setArray(6, c.createArrayOf("integer", rollbackSeqs));
            ps.setArray(7, c.createArrayOf("text", lineages));
            ps.setString(8, saga);
            ps.setString(9, engine);
            ps.setString(10, saga);
            ps.setString(11, saga);
            ps.setString(12, saga);
            try (ResultSet m = ps.executeQuery()) {
                while (m.next()) {
                    int k = m.getInt("n") - 1;
                    claimed[k] = completed(c, locked.get(k), m);
                }
            }
        }
        List<ClaimedRun> runs = new ArrayList<>(n);
        for (ClaimedRun run : claimed) {
            if (run != null) { // a run without message is not claimed, as the one statement's join
                runs.add(run);
            }
        }
        return runs;
    }

    /** A lineage as an array literal, which the round's statement casts back to {@code uuid[]}. */
    private static String lineage(UUID[] lineage) {
        StringBuilder s = new StringBuilder("{");
        for (int i = 0; i < lineage.length; i++) {
            s.append(i == 0 ? "" : ",").append(lineage[i]);
        }
        return s.append('}').toString();
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
