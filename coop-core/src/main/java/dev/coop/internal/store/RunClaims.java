package dev.coop.internal.store;

import static dev.coop.internal.store.ClaimGates.gateOf;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/**
 * The claims of runs: by saga (one run, or a round of several), and the reclaims of one run by id (a continuation, a
 * reclaim that waits for a lock, a run locked again after its failed step rolled back).
 */
final class RunClaims {
    private final SchemaName schema;
    private final Time time;
    private final ClaimGates gates;
    private final ClaimRows rows;

    private final String claimSql;
    /**
     * The claim of a round: up to a bound number of runs in the one statement ({@link #claimRound}); measured
     * cheaper than the split claim's two statements once several runs are locked at once (performance-log.md,
     * 2026-12-02).
     */
    private final String roundClaimSql;
    /** The claim of one run of a saga without limits, in two small statements. */
    private final SplitClaim split;
    /** The claim by saga and the reclaim by id on Citus; used once {@link #sharded} said the layout is Citus's. */
    private final ShardedClaims shardedClaims;
    /** The claim and reclaim of a limited saga on Citus. */
    private final ShardedLimitedClaim shardedLimited;
    private volatile boolean sharded;
    private final String reclaimSql;
    private final String reclaimUnchangedSql;
    /** {@link #reclaimUnchangedSql} waiting for the run's lock a moment ({@link #reclaimHeld}). */
    private final String reclaimHeldSql;
    private final String reclaimWaitingSql;
    private final String[] limitedReclaimWaitingSql = new String[6];
    /** How long a continuing worker waits for the lock of its run when its reclaim found it locked. */
    static final int RECLAIM_WAIT_MILLIS = 200;

    /**
     * The same for sagas with limits, by {@link ClaimGates#gateOf}: the claim first takes a slot and a rate token
     * (schema versions 11 and 14; see {@link LimitedClaim}).
     */

    private final LimitedClaim[] limitedClaims = new LimitedClaim[6];
    private final LimitedClaim[] limitedReclaims = new LimitedClaim[6];

    /**
     * @param claim the claim statement's text ({@link ClaimSql#CLAIM} with the transaction's idle timeout), before its
     *        schema and its condition are filled in
     * @param lock the first statement of the claim of one run ({@link ClaimSql#CLAIM_LOCK} with the same timeout)
     */
    RunClaims(SchemaName schema, Time time, String claim, String lock, ClaimGates gates, ClaimRows rows,
            NodeReads nodeReads) {
        this.schema = schema;
        this.time = time;
        this.gates = gates;
        this.rows = rows;
        String bySaga = "r.saga = ? AND r.saga_version = ? AND r.status = 'RUNNABLE' AND " + ClaimSql.EVERY_PRIORITY
                + " AND r.runnable_at <= " + ClaimSql.DUE_NOW + " AND " + ClaimSql.NOT_RESERVED_NOW
                + " ORDER BY r.priority DESC, r.runnable_at";
        this.claimSql = schema.sql(claim.formatted(bySaga));
        this.roundClaimSql = claimSql.replaceFirst("LIMIT 1(\\s+)FOR UPDATE SKIP LOCKED",
                "LIMIT ?$1FOR UPDATE SKIP LOCKED");
        if (roundClaimSql.equals(claimSql)) {
            throw new IllegalStateException("the claim no longer ends in LIMIT 1 FOR UPDATE SKIP LOCKED");
        }
        this.split = new SplitClaim(schema, lock, bySaga, rows);
        this.shardedClaims = new ShardedClaims(schema, ShardedClaims.lockOf(lock), split, nodeReads);
        this.shardedLimited = new ShardedLimitedClaim(schema, shardedClaims);
        this.reclaimSql = schema.sql(claim
                .formatted("r.root_id = ? AND r.id = ? AND r.status = 'RUNNABLE' AND r.runnable_at <= {now}"));
        // the reclaim after a miss: waits (a moment at most) for a claim that locked the run while skipping it
        this.reclaimWaitingSql = waiting(reclaimSql);
        this.reclaimUnchangedSql = schema.sql(
                claim.formatted("r.root_id = ? AND r.id = ? AND r.status = 'RUNNABLE' AND r.version = ?"));
        this.reclaimHeldSql = waiting(reclaimUnchangedSql);
        for (int gate = 1; gate < 6; gate++) {
            limited(schema, claim, gate);
        }
    }

    private void limited(SchemaName schema, String claim, int gate) {
        boolean slots = (gate & 1) != 0;
        boolean rate = (gate & 2) != 0;
        boolean leased = (gate & 4) != 0;
        limitedClaims[gate] = LimitedClaim.of(schema, claim,
                "r.saga = ? AND r.saga_version = ? AND r.status = 'RUNNABLE'"
                        + " AND " + ClaimSql.EVERY_PRIORITY + " AND r.runnable_at <= " + ClaimSql.DUE_NOW
                        + " AND " + ClaimSql.NOT_RESERVED_NOW
                        + " ORDER BY r.priority DESC, r.runnable_at",
                slots, rate, leased);
        limitedReclaims[gate] = LimitedClaim.of(schema, claim,
                "r.root_id = ? AND r.id = ? AND r.status = 'RUNNABLE' AND r.runnable_at <= {now}", slots, rate,
                leased);
        // a limited run is reserved for its continuing worker too; a reclaim its limits refuse ends the
        // reservation in the same transaction (Worker), so that the run waits for a slot like any other
        limitedReclaimWaitingSql[gate] = waiting(limitedReclaims[gate].sql());
    }

    /**
     * Claims by saga and reclaims by id as Citus routes them ({@link ShardedClaims}) from now on: the engine found the
     * Citus layout at start ({@link CitusLayout#isCitus}); sagas with limits through {@link ShardedLimitedClaim}.
     */
    void sharded(boolean citus) {
        this.sharded = citus;
    }

    /** Whether claims go through {@link ShardedClaims}. */
    boolean sharded() {
        return sharded;
    }

    /** The sharded claims' statements as sent (for EXPLAIN in tests). */
    List<String> shardedSql() {
        return shardedClaims.sql();
    }

    /** The sharded limited claim's gate, by {@link ClaimGates#gateOf} (for EXPLAIN in tests). */
    String shardedGateSql(int gate) {
        return shardedLimited.gateSql(gate);
    }

    /** The reclaim statement of a run of a saga without limits, or with the limits of {@code gate}. */
    String reclaimSql(int gate) {
        return gate == 0 ? reclaimSql : limitedReclaims[gate].sql();
    }

    /**
     * The one-statement claim for {@code saga} as this store sends it in a round, or for a limited saga also alone
     * (for EXPLAIN in tests and the benchmark); a single run of a saga without limits is claimed by
     * {@link SplitClaim} instead.
     */
    public String claimSql(String saga) {
        return claimSql(gates.limit(saga), null);
    }

    private String claimSql(SagaLimits.Limit limit, RateLease lease) {
        return limit == null ? claimSql : limitedClaims[gateOf(limit, lease)].sql();
    }

    /**
     * Locks the runnable run of version {@code version} of {@code saga} that is due first, writing its SEEN if it had
     * not started. Runs of other versions are left to engines that have them.
     */
    public ClaimedRun claim(Connection c, String saga, int version, String engine) throws SQLException {
        SagaLimits.Limit limit = gates.limit(saga); // once: the probe may change it meanwhile
        RateLease lease = gates.takeLease(saga, limit);
        if (limit == null) {
            return sharded
                    ? shardedClaims.claim(c, saga, version, engine, time.bind())
                    : split.claim(c, saga, version, engine, time.bind());
        }
        ClaimedRun run;
        if (sharded) {
            run = shardedLimited.claim(c, saga, version, engine, limit, lease, time.bind());
        } else {
            try (PreparedStatement ps = c.prepareStatement(claimSql(limit, lease))) {
                bindClaim(ps, saga, limit, lease, version, engine);
                run = rows.readClaim(ps);
            }
        }
        if (run == null && lease != null) {
            lease.giveBack(); // no step started on it
        }
        return run;
    }

    /**
     * Locks up to {@code max} runnable runs of version {@code version} of {@code saga} in one statement, the ones due
     * first, as {@link #claim} locks one (a SEEN each for the runs that had not started). Only for sagas without
     * limits: a limited saga's slots and rate tokens are taken one claim at a time.
     */
    public List<ClaimedRun> claimRound(Connection c, String saga, int version, String engine, int max)
            throws SQLException {
        if (gates.isLimited(saga)) {
            throw new IllegalStateException("a limited saga is claimed one run at a time");
        }
        if (sharded) { // one run a transaction: a round's statements by arrays of roots would read every shard
            ClaimedRun run = shardedClaims.claim(c, saga, version, engine, time.bind());
            return run == null ? List.of() : List.of(run);
        }
        List<ClaimedRun> runs = new java.util.ArrayList<>(max);
        try (PreparedStatement ps = c.prepareStatement(roundClaimSql)) {
            OffsetDateTime now = time.bind();
            ps.setObject(1, now);
            ps.setString(2, saga);
            ps.setInt(3, version);
            ps.setObject(4, now);
            ps.setInt(5, max); // LIMIT ?, before the SEEN's engine
            ps.setString(6, engine);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                for (ClaimedRun run = rows.readClaim(c, rs); run != null; run = rows.readClaim(c, rs)) {
                    runs.add(run);
                }
            }
        }
        return runs;
    }

    /** Binds {@link #claimSql(String)} (for EXPLAIN in tests and the benchmark). */
    public void bindClaim(PreparedStatement ps, String saga, int version, String engine) throws SQLException {
        bindClaim(ps, saga, gates.limit(saga), null, version, engine);
    }

    private void bindClaim(PreparedStatement ps, String saga, SagaLimits.Limit limit, RateLease lease, int version,
            String engine) throws SQLException {
        OffsetDateTime now = time.bind();
        int i = 0;
        if (limit != null) { // pick (saga, version, now), then the gate
            ps.setString(++i, saga);
            ps.setInt(++i, version);
            ps.setObject(++i, now);
            i = limitedClaims[gateOf(limit, lease)].bind(ps, i, saga, limit, now, lease);
        } else {
            ps.setObject(++i, now);
            ps.setString(++i, saga);
            ps.setInt(++i, version);
            ps.setObject(++i, now);
        }
        ps.setString(++i, engine);
    }

    /** Locks one specific run of {@code saga} again if it is still runnable (immediate continuation). */
    public ClaimedRun reclaim(Connection c, UUID rootId, UUID runId, String saga, String engine)
            throws SQLException {
        return reclaim(c, rootId, runId, saga, engine, false);
    }

    /**
     * The reclaim of a continuing run that the reclaim in its commit's round trip found locked: another worker's
     * claim by saga read the run before that commit, found it reserved when it locked it and skipped it, but holds
     * its lock until its own transaction ends (PostgreSQL keeps the lock of a row that a re-check after the lock
     * rejected). Waits for that lock, {@link #RECLAIM_WAIT_MILLIS} at most: the caller's transaction has no lock to
     * wait for in turn. Returns null (the transaction rolled back) when the wait ran out.
     */
    public ClaimedRun reclaimWaiting(Connection c, UUID rootId, UUID runId, String saga, String engine)
            throws SQLException {
        try {
            return reclaim(c, rootId, runId, saga, engine, true);
        } catch (SQLException e) {
            if (!"55P03".equals(e.getSQLState())) { // lock_not_available: the other transaction still runs
                throw e;
            }
            c.rollback();
            return null;
        }
    }

    private ClaimedRun reclaim(Connection c, UUID rootId, UUID runId, String saga, String engine, boolean waiting)
            throws SQLException {
        SagaLimits.Limit limit = gates.limit(saga);
        if (sharded && limit == null) { // skips a held lock where the waiting reclaim waits: the run is claimed later
            return shardedClaims.reclaim(c, rootId, runId, engine, time.bind());
        }
        RateLease lease = gates.takeLease(saga, limit);
        ClaimedRun run = null;
        if (sharded) { // as above: a held lock is skipped, not waited for
            try {
                run = shardedLimited.reclaim(c, rootId, runId, saga, engine, limit, lease, time.bind());
            } finally {
                if (run == null && lease != null) {
                    lease.giveBack();
                }
            }
            return run;
        }
        try (PreparedStatement ps = c.prepareStatement(waiting
                ? (limit == null ? reclaimWaitingSql : limitedReclaimWaitingSql[gateOf(limit, lease)])
                : (limit == null ? reclaimSql : limitedReclaims[gateOf(limit, lease)].sql()))) {
            bindReclaim(ps, 0, saga, limit, lease, rootId, runId, engine, time.bind());
            run = waiting ? rows.readCommitted(ps) : rows.readClaim(ps); // waiting: the settings' result set comes first
        } finally {
            if (run == null && lease != null) {
                lease.giveBack();
            }
        }
        return run;
    }

    void bindReclaim(PreparedStatement ps, int i, String saga, SagaLimits.Limit limit, RateLease lease,
            UUID rootId, UUID runId, String engine, OffsetDateTime now) throws SQLException {
        if (limit != null) { // pick (root, run, now), then the gate
            ps.setObject(++i, rootId);
            ps.setObject(++i, runId);
            ps.setObject(++i, now);
            i = limitedReclaims[gateOf(limit, lease)].bind(ps, i, saga, limit, now, lease);
        } else {
            ps.setObject(++i, now);
            ps.setObject(++i, rootId);
            ps.setObject(++i, runId);
            ps.setObject(++i, now);
        }
        ps.setString(++i, engine);
    }

    /**
     * A reclaim that waits for the run's lock ({@link #RECLAIM_WAIT_MILLIS} at most, by {@code lock_timeout}, set back
     * to what it was after the statement) instead of skipping it: its first {@code FOR UPDATE SKIP LOCKED}, the one
     * that locks the run, without {@code SKIP LOCKED} (a limited reclaim's rate tokens are still skipped when locked).
     */
    private static String waiting(String reclaim) {
        int at = reclaim.indexOf("FOR UPDATE SKIP LOCKED");
        if (at < 0) {
            throw new IllegalStateException("a reclaim without FOR UPDATE SKIP LOCKED");
        }
        return """
                SELECT set_config('coop.lock_timeout', current_setting('lock_timeout'), true),
                       set_config('lock_timeout', '%d', true);
                """.formatted(RECLAIM_WAIT_MILLIS)
                + reclaim.substring(0, at) + "FOR UPDATE" + reclaim.substring(at + "FOR UPDATE SKIP LOCKED".length())
                + ";\nSELECT set_config('lock_timeout', current_setting('coop.lock_timeout'), true)";
    }

    /**
     * Ends the reservation of a run for its continuing worker (a reclaim that found it gone, or a worker that does not
     * continue after all), unless another transaction holds the run: that one moves it on and ends the reservation
     * itself. The caller commits.
     */
    public void release(Connection c, UUID rootId, UUID runId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                UPDATE {schema}.run SET reserved_until = NULL
                 WHERE root_id = ? AND id = (SELECT id FROM {schema}.run
                                              WHERE root_id = ? AND id = ? AND reserved_until IS NOT NULL
                                                FOR UPDATE SKIP LOCKED)
                """))) {
            ps.setObject(1, rootId);
            ps.setObject(2, rootId);
            ps.setObject(3, runId);
            ps.executeUpdate();
        }
    }

    /**
     * Holds a run whose lock the caller's transaction is about to let go of while its step still runs (a round that
     * commits its other runs' steps, see {@code RoundSplit}): claims by saga skip it for {@code millis}, as they skip a
     * continuing run's reservation, so that only {@link #reclaimHeld} by the same worker locks it again. The caller
     * commits.
     */
    public void hold(Connection c, UUID runId, int millis) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "UPDATE {schema}.run SET reserved_until = statement_timestamp() + ? * interval '1 millisecond'"
                        + " WHERE id = ?"))) {
            ps.setInt(1, millis);
            ps.setObject(2, runId);
            ps.executeUpdate();
        }
    }

    /**
     * Locks a {@link #hold held} run again, unless another transaction moved it on meanwhile (its version changed),
     * waiting {@link #RECLAIM_WAIT_MILLIS} at most for a claim that locked it while skipping it. Returns null (the
     * transaction rolled back when the wait ran out) when it could not.
     */
    public ClaimedRun reclaimHeld(Connection c, ClaimedRun run, String engine) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(reclaimHeldSql)) {
            ps.setObject(1, time.bind());
            ps.setObject(2, run.rootId());
            ps.setObject(3, run.id());
            ps.setInt(4, run.version());
            ps.setString(5, engine);
            return rows.readCommitted(ps);
        } catch (SQLException e) {
            if (!"55P03".equals(e.getSQLState())) {
                throw e;
            }
            c.rollback();
            return null;
        }
    }

    /** Locks a run again after its failed step was rolled back, unless another engine moved it on meanwhile. */
    public ClaimedRun reclaimUnchanged(Connection c, ClaimedRun run, String engine) throws SQLException {
        if (sharded) {
            return shardedClaims.reclaimUnchanged(c, run, engine, time.bind());
        }
        try (PreparedStatement ps = c.prepareStatement(reclaimUnchangedSql)) {
            ps.setObject(1, time.bind());
            ps.setObject(2, run.rootId());
            ps.setObject(3, run.id());
            ps.setInt(4, run.version());
            ps.setString(5, engine);
            return rows.readClaim(ps);
        }
    }
}
