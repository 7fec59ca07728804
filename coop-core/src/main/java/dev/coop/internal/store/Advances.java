package dev.coop.internal.store;

import static dev.coop.internal.store.ClaimGates.gateOf;

import dev.coop.RunStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The advances of runs (their events, their new state, and the count-off at the parent of a run that finished), each
 * with what follows it in the same round trip ({@link Tail}); the count-off of a parent committed by its last child;
 * the postponement and parking of a run that met database trouble.
 */
final class Advances {
    private final SchemaName schema;
    private final Time time;
    private final AdvanceBinding binding;
    private final ClaimGates gates;
    private final RunClaims reclaims;
    private final KeyedRuns keys;
    private final ClaimRows rows;

    private final String advanceSql;
    private final String advanceCommitSql;
    private final String advanceContinueSql;

    private final String[] limitedAdvanceContinueSql = new String[6];
    private final String[] limitedAloneContinueSql = new String[6];

    private final String aloneSql;
    private final String aloneCommitSql;
    private final String aloneContinueSql;
    /** The same with the continuation's slim reclaim ({@link ClaimSql#RECLAIM_CONTINUATION}). */
    private final String advanceSlimContinueSql;
    private final String aloneSlimContinueSql;
    private final String advanceJoinCheckSql;
    private final String aloneJoinCheckSql;

    /** The quiet form of each advance statement sent, by its full form ({@link AdvanceSql#quiet}). */
    private final ConcurrentHashMap<String, String> quietSql = new ConcurrentHashMap<>();
    /** On Citus: the form of each advance statement with its events as VALUES, by full form and number of events. */
    private final ConcurrentHashMap<String, String> citusSql = new ConcurrentHashMap<>();

    private final String postponeSql;

    private final String countOffSql;
    /** On Citus: the COMMITTED of a parent its last child's count-off committed ({@link AdvanceSql#countOffOnCitus}). */
    private final String parentCommittedSql;
    /** On Citus: the parent's {@code commit_allowed} before a standalone count-off ({@link AdvanceSql#PARENT_ALLOWED}). */
    private final String parentAllowedSql;
    private final String joinCheckSql;

    /**
     * @param binding what binds an advance's own parameters
     * @param slim the slim reclaim of a continuation ({@link ClaimSql#RECLAIM_CONTINUATION} with the idle timeout)
     */
    Advances(Store store, AdvanceBinding binding, ClaimGates gates, RunClaims reclaims, ClaimRows rows, String slim) {
        this.schema = store.schema();
        this.time = store.time();
        this.binding = schema.citus() ? binding.withEventValues() : binding; // AdvanceSql.eventValues
        this.gates = gates;
        this.reclaims = reclaims;
        this.keys = new KeyedRuns(schema);
        this.rows = rows;
        String reserve = AdvanceSql.RESERVED;
        String advance = schema.sql(AdvanceSql.ADVANCE.replace("{reserve}", reserve));
        String alone = schema.sql(AdvanceSql.ADVANCE_ALONE.replace("{reserve}", reserve));
        String next = ";\nCOMMIT;\nBEGIN;\n";
        this.advanceSql = schema.sql(AdvanceSql.ADVANCE.replace("{reserve}", AdvanceSql.NOT_RESERVED));
        this.advanceCommitSql = advanceSql + ";\nCOMMIT";
        this.advanceContinueSql = advance + next + reclaims.reclaimSql(0);
        this.aloneSql = schema.sql(AdvanceSql.ADVANCE_ALONE.replace("{reserve}", AdvanceSql.NOT_RESERVED));
        this.aloneCommitSql = aloneSql + ";\nCOMMIT";
        this.aloneContinueSql = alone + next + reclaims.reclaimSql(0);
        this.advanceSlimContinueSql = advance + next + slim;
        this.aloneSlimContinueSql = alone + next + slim;
        this.advanceJoinCheckSql = advanceSql + ";\n" + schema.sql(JOIN_CHECK);
        this.aloneJoinCheckSql = aloneSql + ";\n" + schema.sql(JOIN_CHECK);
        for (int gate = 1; gate < 6; gate++) {
            limitedAdvanceContinueSql[gate] = advance + next + reclaims.reclaimSql(gate);
            limitedAloneContinueSql[gate] = alone + next + reclaims.reclaimSql(gate);
        }
        this.postponeSql = schema.sql(AdvanceSql.POSTPONE);
        this.countOffSql = schema.sql(schema.citus()
                ? AdvanceSql.countOffAloneOnCitus(AdvanceSql.COUNT_OFF)
                : AdvanceSql.COUNT_OFF);
        this.parentCommittedSql = schema.sql(AdvanceSql.PARENT_COMMITTED);
        this.parentAllowedSql = schema.sql(AdvanceSql.PARENT_ALLOWED);
        this.joinCheckSql = schema.sql(JOIN_CHECK);
    }

    /**
     * Appends the run's events, moves the run to its new state, and when the run finished, counts it off at its
     * parent (waking the parent when it was the last child).
     *
     * @return the parent, when this run finished and had one: runnable again, committed here, or still waiting
     * @throws SQLException with SQLSTATE {@value Store#CANCELLED} when {@code next.checkCancellation()} and the run's scope
     *         was cancelled; the transaction must then roll back
     */
    public Counted advance(Connection c, ClaimedRun run, String engine, List<LogEntry> entries, Advance next)
            throws SQLException {
        return (Counted) advance(c, Tail.NONE, run, engine, entries, next);
    }

    /**
     * The advance of a run that does not finish, and the COMMIT, in one round trip; with {@code reclaim}, also the
     * next transaction's BEGIN and the reclaim of the same run (an immediate continuation without a round trip of
     * its own). Nothing may follow the advance in the transaction: no count-off, no join settlement.
     *
     * @return the run reclaimed in the new transaction, or null (not asked, or not runnable now, or taken by another
     *         worker between the COMMIT and the reclaim); with {@code reclaim} the connection is in a transaction
     *         again either way
     */
    public ClaimedRun advanceAndCommit(Connection c, ClaimedRun run, String engine, List<LogEntry> entries,
            Advance next, boolean reclaim) throws SQLException {
        if (next.status().isFinished()) {
            throw new IllegalArgumentException("a finished run is counted off and settled before its commit");
        }
        // on Citus no continuation in the same round trip: its reclaim's joins would read every shard
        return (ClaimedRun) advance(c, reclaim && !reclaims.sharded() ? Tail.CONTINUE : Tail.COMMIT, run, engine,
                entries, next);
    }

    /** What is sent after the advance in the same round trip. */
    private enum Tail {
        NONE, COMMIT, CONTINUE, COMMIT_UNLESS_JOINED
    }

    /** SQLSTATE of {@code assert_no_pending_members}: a join membership of the messages is pending (version 19). */
    static final String JOINS_PENDING = "CP004";
    /** The savepoint between a finishing advance and its join check. */
    private static final String JOIN_CHECK_SAVEPOINT = "coop_join_check";
    /** A savepoint, the join check of its parameter's messages, and the COMMIT ({@link #committedUnlessJoined}). */
    static final String JOIN_CHECK = "SAVEPOINT " + JOIN_CHECK_SAVEPOINT
            + ";\nSELECT {schema}.assert_no_pending_members(?::uuid[]);\nCOMMIT";

    private Object advance(Connection c, Tail tail, ClaimedRun run, String engine,
            List<LogEntry> entries, Advance next) throws SQLException {
        if (next.status().isFinished() && run.orderingKey() != null) {
            return advanceKeyed(c, tail, run, engine, entries, next);
        }
        return write(c, tail, run, engine, entries, next);
    }

    /**
     * The final advance of a keyed run, then the release of its key's next run ({@link KeyedRuns}) before anything
     * commits: a round trip more, for keyed runs only.
     */
    private Object advanceKeyed(Connection c, Tail tail, ClaimedRun run, String engine, List<LogEntry> entries,
            Advance next) throws SQLException {
        Object counted = write(c, Tail.NONE, run, engine, entries, next);
        keys.releaseAfter(c, run);
        return switch (tail) {
            case NONE -> counted;
            case COMMIT_UNLESS_JOINED -> commitUnlessJoined(c, List.of(run.messageId()));
            default -> throw new IllegalStateException("a finished run's advance commits after its count-off");
        };
    }

    private Object write(Connection c, Tail tail, ClaimedRun run, String engine,
            List<LogEntry> entries, Advance next) throws SQLException {
        boolean finished = next.status().isFinished();
        UUID countOffAt = finished && run.awaited() ? run.parentId() : null;
        SagaLimits.Limit limit = gates.limit(run.saga()); // once: the probe may change it meanwhile
        RateLease lease = tail == Tail.CONTINUE ? gates.takeLease(run.saga(), limit) : null;
        Write write = new Write(tail, run, engine, next, countOffAt, limit, lease);
        String sql = sql(write);
        // a claimed run is runnable: staying so now, its update would set status and due time to what they are
        boolean quiet = next.status() == RunStatus.RUNNABLE && next.runnableAt() == null
                && next.delayMillis() == 0;
        if (schema.citus()) { // the events as VALUES, one text per number of events (AdvanceSql.eventValues)
            int events = entries.size();
            sql = citusSql.computeIfAbsent(sql + '\u0000' + events, k -> citus(full(k), events));
        }
        if (quiet) {
            sql = quietSql.computeIfAbsent(sql, full -> AdvanceSql.quiet(schema, full));
        }
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            OffsetDateTime now = time.bind();
            int i = binding.bind(ps, 0, new Store.Move(run, entries, next), engine, quiet, now);
            if (countOffAt != null) {
                i = bindAllowed(ps, i, run.rootId(), AdvanceSql.parentScope(run.lineage(), run.cancelFrom()));
                i = bindCountOff(ps, i, next.status(), run.rootId(), countOffAt, engine, run.claimedAt(), now,
                        binding.localSagas(), !schema.citus());
            }
            return readTail(c, ps, i, write, now);
        }
    }

    /**
     * One advance as it is sent: what follows it, the parent it counts off at (null: none, the {@code ALONE} form),
     * and the limits and rate token its continuation's reclaim goes through.
     */
    private record Write(Tail tail, ClaimedRun run, String engine, Advance next, UUID countOffAt,
            SagaLimits.Limit limit, RateLease lease) {
        boolean alone() {
            return countOffAt == null;
        }

        /**
         * The continuation of a step that wrote one happy-path instance: what the run's claim read stays true but for
         * the run's own row and that instance, so its reclaim locks and reads the row alone.
         */
        boolean slim() {
            return tail == Tail.CONTINUE && limit == null && !run.rollback() && !next.rollback()
                    && next.instance() != null && next.instanceSeq() == run.stepsDone()
                    && next.stepsDone() == run.stepsDone() + 1;
        }
    }

    /** An advance's form on Citus: its events as VALUES, and its count-off without {@code parent_committed}. */
    private static String citus(String sql, int events) {
        String values = AdvanceSql.eventValues(sql, events);
        return values.contains("parent_committed AS (") ? AdvanceSql.countOffOnCitus(values) : values;
    }

    /** The full form in a key of {@link #citusSql}. */
    private static String full(String key) {
        return key.substring(0, key.lastIndexOf('\u0000'));
    }

    /** The statement of an advance in its full form. */
    private String sql(Write write) {
        boolean alone = write.alone();
        return switch (write.tail()) {
            case NONE -> alone ? aloneSql : advanceSql;
            case COMMIT -> alone ? aloneCommitSql : advanceCommitSql;
            case CONTINUE -> write.limit() != null
                    ? (alone ? limitedAloneContinueSql : limitedAdvanceContinueSql)[gateOf(write.limit(),
                            write.lease())]
                    : write.slim()
                            ? (alone ? aloneSlimContinueSql : advanceSlimContinueSql)
                            : (alone ? aloneContinueSql : advanceContinueSql);
            case COMMIT_UNLESS_JOINED -> alone ? aloneJoinCheckSql : advanceJoinCheckSql;
        };
    }

    /** Binds what follows the advance (from {@code i}), sends it all, and reads what its tail returns. */
    private Object readTail(Connection c, PreparedStatement ps, int i, Write write, OffsetDateTime now)
            throws SQLException {
        switch (write.tail()) {
            case NONE -> {
                return readCounted(ps, write.engine(), write.run().claimedAt());
            }
            case COMMIT_UNLESS_JOINED -> {
                ps.setArray(++i, c.createArrayOf("uuid", new UUID[]{write.run().messageId()}));
                return committedUnlessJoined(ps);
            }
            case CONTINUE -> {
                return continued(ps, i, write, now);
            }
            default -> {
                return rows.readCommitted(ps);
            }
        }
    }

    /** Binds the reclaim that follows a continuing advance's COMMIT and BEGIN, and reads the run it locked, or null. */
    private ClaimedRun continued(PreparedStatement ps, int i, Write write, OffsetDateTime now) throws SQLException {
        ClaimedRun run = write.run();
        if (write.slim()) {
            ps.setObject(++i, now);
            ps.setString(++i, write.engine());
            ps.setObject(++i, run.rootId());
            ps.setObject(++i, run.id());
            ps.setInt(++i, run.version() + 1); // the version this advance leaves
            ps.setObject(++i, now);
            return rows.readCommitted(ps, rs -> ClaimRows.continued(rs, run, write.next()));
        }
        // as in reclaim()
        reclaims.bindReclaim(ps, i, run.saga(), write.limit(), write.lease(), run.rootId(), run.id(),
                write.engine(), now);
        ClaimedRun again = rows.readCommitted(ps);
        if (again == null && write.lease() != null) {
            write.lease().giveBack();
        }
        return again;
    }

    /**
     * The advance of a run that finished without a parent to count off, then a savepoint, the check that its message
     * has no pending join membership ({@code assert_no_pending_members}) and COMMIT, in one round trip: almost every
     * run's last transaction.
     *
     * @return true when it committed; false when a membership is pending: the transaction is open, rolled back to
     *         the savepoint after the advance (which stands), for the caller to settle the memberships and commit
     */
    public boolean advanceFinishedAndCommit(Connection c, ClaimedRun run, String engine, List<LogEntry> entries,
            Advance next) throws SQLException {
        requireFinishedAlone(run, next);
        return (Boolean) advance(c, Tail.COMMIT_UNLESS_JOINED, run, engine, entries, next);
    }

    private static void requireFinishedAlone(ClaimedRun run, Advance next) {
        if (!next.status().isFinished() || (run.parentId() != null && run.awaited())) {
            throw new IllegalArgumentException("only a finished run without a parent to count off");
        }
    }

    /**
     * Executes {@code ps}, which ends with {@link #JOIN_CHECK}: true when it committed; false when a membership is
     * pending, the transaction then rolled back to the savepoint before the check (what came before it stands).
     */
    static Boolean committedUnlessJoined(PreparedStatement ps) throws SQLException {
        try {
            executeAll(ps);
            return Boolean.TRUE;
        } catch (SQLException e) {
            if (!JOINS_PENDING.equals(e.getSQLState())) {
                throw e; // the advance failed (a cancellation, a lost claim, the database): the caller rolls back
            }
        }
        try (java.sql.Statement st = ps.getConnection().createStatement()) {
            st.execute("ROLLBACK TO SAVEPOINT " + JOIN_CHECK_SAVEPOINT); // a constant, not input
        }
        return Boolean.FALSE;
    }

    /** {@link #JOIN_CHECK} of {@code finished} alone: true when it committed (see {@link #committedUnlessJoined}). */
    boolean commitUnlessJoined(Connection c, List<UUID> finished) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(joinCheckSql)) {
            ps.setArray(1, c.createArrayOf("uuid", finished.toArray()));
            return committedUnlessJoined(ps);
        }
    }

    /** Executes {@code ps} and reads past every result it returns (statements sent together in one round trip). */
    static void executeAll(PreparedStatement ps) throws SQLException {
        boolean isResultSet = ps.execute();
        while (isResultSet || ps.getUpdateCount() != -1) {
            if (isResultSet) {
                ps.getResultSet().close();
            }
            isResultSet = ps.getMoreResults();
        }
    }

    /** Counts {@code child}, a parent committed by its last child, off at its own parent. */
    public Counted countOff(Connection c, Counted child, RunStatus childStatus, String engine,
            OffsetDateTime startedAt) throws SQLException {
        UUID[] parentScope = AdvanceSql.parentScope(child.lineage(), child.cancelFrom());
        try (PreparedStatement ps = c.prepareStatement(countOffSql)) {
            int i = 0;
            if (schema.citus()) { // the parent's commit_allowed first, on the coordinator
                ps.setBoolean(++i, childStatus == RunStatus.COMMITTED
                        && parentAllowed(c, child.rootId(), parentScope));
            } else {
                i = bindAllowed(ps, i, child.rootId(), parentScope);
            }
            bindCountOff(ps, i, childStatus, child.rootId(), child.parentId(), engine, startedAt, time.bind(),
                    binding.localSagas(), !schema.citus());
            return readCounted(ps, engine, startedAt);
        }
    }

    /**
     * On Citus, {@code commit_allowed} of the parent a standalone count-off may commit ({@link
     * AdvanceSql#PARENT_ALLOWED}): read only when the child committed (a parent commits only then), but whether or
     * not the parent is in its last step, which the count-off finds out. The advance's count-off reads it in its own
     * statement (Citus evaluates it there on the coordinator, as a subplan, for every count-off too).
     */
    private boolean parentAllowed(Connection c, UUID rootId, UUID[] parentScope) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(parentAllowedSql)) {
            bindAllowed(ps, 0, rootId, parentScope);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** Binds the parent's {@code commit_allowed} (AdvanceSql.COUNT_OFF_PARENT): its root and scope. */
    private static int bindAllowed(PreparedStatement ps, int i, UUID rootId, UUID[] parentScope) throws SQLException {
        ps.setObject(++i, rootId, Types.OTHER);
        ps.setArray(++i, ps.getConnection().createArrayOf("uuid", parentScope));
        return i;
    }

    private static int bindCountOff(PreparedStatement ps, int i, RunStatus childStatus, UUID rootId, UUID parentId,
            String engine, OffsetDateTime startedAt, OffsetDateTime now, String localSagas,
            boolean parentCommitted) throws SQLException {
        for (int k = 0; k < 4; k++) {
            ps.setString(++i, childStatus.name());
        }
        ps.setObject(++i, now); // finished_at of a parent committed here
        ps.setObject(++i, now); // runnable_at of a parent woken here
        ps.setObject(++i, rootId, Types.OTHER);
        ps.setObject(++i, parentId, Types.OTHER);
        if (parentCommitted) { // parent_committed's (on Citus a statement of its own: AdvanceSql.countOffOnCitus)
            ps.setString(++i, engine);
            ps.setObject(++i, startedAt);
        }
        ps.setString(++i, localSagas); // the parent's wake-up (AdvanceSql.PARENT_WOKEN)
        return i;
    }

    /**
     * Reads a count-off's parent; on Citus, writes the parent's COMMITTED when it committed here
     * ({@link AdvanceSql#PARENT_COMMITTED}).
     */
    private Counted readCounted(PreparedStatement ps, String engine, OffsetDateTime startedAt) throws SQLException {
        Counted counted;
        String finalStep;
        try (ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) {
                return null;
            }
            counted = counted(rs);
            finalStep = schema.citus() ? rs.getString(9) : null;
        }
        if (schema.citus() && counted.status() == RunStatus.COMMITTED) {
            try (PreparedStatement insert = ps.getConnection().prepareStatement(parentCommittedSql)) {
                insert.setObject(1, counted.messageId());
                insert.setString(2, counted.saga());
                insert.setString(3, engine);
                insert.setString(4, finalStep);
                insert.setArray(5, ps.getConnection().createArrayOf("uuid", counted.lineage()));
                insert.setObject(6, startedAt);
                insert.setObject(7, counted.rootId());
                insert.executeUpdate();
            }
        }
        return counted;
    }

    private static Counted counted(ResultSet rs) throws SQLException {
        return new Counted(rs.getObject(1, UUID.class), rs.getString(2), RunStatus.valueOf(rs.getString(3)),
                rs.getObject(4, UUID.class), rs.getObject(5, UUID.class), rs.getObject(6, UUID.class),
                Counted.lineage(rs, 7), Counted.cancelFrom(rs, 8));
    }

    /**
     * Makes a runnable run wait {@code delayMillis} before it can be claimed again (bookkeeping retry), unless it
     * moved meanwhile.
     *
     * @param seenKept whether this transaction keeps the SEEN its claim wrote (the run then counts as started): it is
     *        the claim's transaction, which is checked (SQLSTATE CP002 when user code ended it)
     */
    public void postpone(Connection c, ClaimedRun run, long delayMillis, boolean seenKept) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(postponeSql)) {
            OffsetDateTime now = time.bind();
            ps.setString(1, seenKept ? run.xact() : null);
            ps.setString(2, seenKept ? run.xact() : null);
            ps.setObject(3, now);
            ps.setLong(4, delayMillis);
            ps.setBoolean(5, seenKept);
            ps.setObject(6, now);
            ps.setObject(7, run.rootId());
            ps.setObject(8, run.id());
            ps.setInt(9, run.version());
            ps.setString(10, binding.localSagas());
            ps.executeQuery().close();
        }
    }

    /** Parks a run that met database trouble too often in a row; nothing happens if it moved meanwhile. */
    public boolean parkAfterRetries(Connection c, ClaimedRun run, String failure) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(AdvanceSql.PARK_AFTER_RETRIES))) {
            ps.setString(1, failure);
            ps.setObject(2, run.rootId());
            ps.setObject(3, run.id());
            ps.setInt(4, run.version());
            return ps.executeUpdate() == 1;
        }
    }
}
