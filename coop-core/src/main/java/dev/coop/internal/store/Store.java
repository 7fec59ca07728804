package dev.coop.internal.store;

import dev.coop.internal.EngineSagas;
import dev.coop.internal.limit.LimitedClaim;
import dev.coop.internal.limit.RateLease;
import dev.coop.internal.limit.SagaLimits;
import dev.coop.internal.step.Advance;
import dev.coop.internal.step.AttemptLog;
import dev.coop.internal.step.ClaimedRun;
import dev.coop.internal.step.Worker;

import dev.coop.Coop;
import dev.coop.RunResult;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.Failure;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Every statement Coop runs against its tables, one method per statement. All values are bind parameters; the
 * only text spliced in is the validated schema name.
 */
public final class Store {
    private final SchemaName schema;
    private final Time time;
    private final String claimSql;
    /** The claim of a round: up to a bound number of runs at once ({@link #claimRound}). */
    private final String roundClaimSql;
    private final String reclaimSql;
    private final String reclaimUnchangedSql;
    private final String reclaimWaitingSql;
    private final String[] limitedReclaimWaitingSql = new String[6];
    /** How long a continuing worker waits for the lock of its run when its reclaim found it locked. */
    static final int RECLAIM_WAIT_MILLIS = 200;
    /** How long a continuing run stays reserved for its worker after its commit (schema version 15). */
    public static final int RESERVATION_MILLIS = 250;
    private final String emitSql;
    private final String emitOneSql;
    private final String advanceSql;
    private final String advanceCommitSql;
    private final String advanceContinueSql;
    /**
     * The same for sagas with limits, by {@link #gateOf}: the claim first takes a slot and a rate token (schema
     * versions 11 and 14; see {@link LimitedClaim}).
     */
    private final LimitedClaim[] limitedClaims = new LimitedClaim[6];
    private final LimitedClaim[] limitedReclaims = new LimitedClaim[6];
    private final String[] limitedAdvanceContinueSql = new String[6];
    private final String[] limitedAloneContinueSql = new String[6];
    /** The sagas whose claims go through their limits, with them (read from the registry; see {@link #limited}). */
    private volatile Map<String, SagaLimits.Limit> limited = Map.of();
    /** The rate tokens this store leased, per saga (see {@link #refillLease}). */
    private final Map<String, RateLease> leases = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.Set<String> leasing = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final SagaLimits limits;
    private final String aloneSql;
    private final String aloneCommitSql;
    private final String aloneContinueSql;
    /** The same with the continuation's slim reclaim ({@link Sql#RECLAIM_CONTINUATION}). */
    private final String advanceSlimContinueSql;
    private final String aloneSlimContinueSql;
    private final String advanceJoinCheckSql;
    private final String aloneJoinCheckSql;
    /**
     * The quiet form of each advance statement sent, by its full form: an advance that leaves a runnable run runnable
     * now sets neither its status nor its due time ({@link Sql#quiet}).
     */
    private final ConcurrentHashMap<String, String> quietSql = new ConcurrentHashMap<>();
    /** A round's deferred advances, in one statement ({@link #advanceAll}). */
    private final RoundAdvances roundAdvances;
    private final String postponeSql;
    private final String requestChildRollbacksSql;
    private final String countOffSql;
    private final String childFailuresSql;
    private final String childResultsSql;
    private final String countUnstartedSql;
    private final String detachUnstartedSql;
    private final String probeSql;
    private final boolean requireHandlers;
    private final String localSagas;
    /** Topics already warned about, per schema (bounded: a warning per topic is enough). */
    private static final java.util.Set<String> WARNED = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(Store.class);
    private final String runStatusesSql;
    private final String eventsSql;
    private final AttemptLog attempts;

    public Store(SchemaName schema, Time time) {
        this(schema, false, time);
    }

    /**
     * @param requireHandlers whether launching a message on a topic no saga is registered for fails (strict) rather
     *        than only being logged (once per topic)
     * @param time what every {@code {now}} of the statements binds
     */
    public Store(SchemaName schema, boolean requireHandlers, Time time) {
        this(schema, requireHandlers, time, List.of());
    }

    /**
     * @param localSagas the sagas whose runs the caller wakes in-process after its commits (an engine's own sagas):
     *        runs of them that become due at once by this store's emit and advance statements notify nobody
     */
    public Store(SchemaName schema, boolean requireHandlers, Time time, java.util.Collection<String> localSagas) {
        this(schema, requireHandlers, time, localSagas, null);
    }

    /**
     * @param idleInTransaction the {@code idle_in_transaction_session_timeout} every claim sets for its transaction
     *        (null or zero: the server's)
     */
    public Store(SchemaName schema, boolean requireHandlers, Time time, java.util.Collection<String> localSagas,
            java.time.Duration idleInTransaction) {
        String claim = Sql.idleInTransaction(Sql.CLAIM, idleInTransaction);
        this.localSagas = String.join(",", localSagas);
        this.requireHandlers = requireHandlers;
        this.schema = schema;
        this.time = java.util.Objects.requireNonNull(time, "time");
        this.claimSql = schema.sql(claim
                .formatted("r.saga = ? AND r.saga_version = ? AND r.status = 'RUNNABLE' AND " + Sql.EVERY_PRIORITY
                        + " AND r.runnable_at <= " + Sql.DUE_NOW + " AND " + Sql.NOT_RESERVED_NOW
                        + " ORDER BY r.priority DESC, r.runnable_at"));
        this.roundClaimSql = claimSql.replaceFirst("LIMIT 1(\\s+)FOR UPDATE SKIP LOCKED",
                "LIMIT ?$1FOR UPDATE SKIP LOCKED");
        this.reclaimSql = schema.sql(claim
                .formatted("r.id = ? AND r.status = 'RUNNABLE' AND r.runnable_at <= {now}"));
        // the reclaim after a miss: waits (a moment at most) for a claim that locked the run while skipping it
        this.reclaimWaitingSql = waiting(reclaimSql);
        this.reclaimUnchangedSql = schema.sql(
                claim.formatted("r.id = ? AND r.status = 'RUNNABLE' AND r.version = ?"));
        this.emitSql = schema.sql(Sql.EMIT);
        this.emitOneSql = schema.sql(Sql.EMIT_ONE);
        this.advanceSql = schema.sql(Sql.ADVANCE.replace("{reserve}", Sql.NOT_RESERVED));
        this.advanceCommitSql = advanceSql + ";\nCOMMIT";
        String reserve = Sql.RESERVED;
        this.advanceContinueSql = schema.sql(Sql.ADVANCE.replace("{reserve}", reserve)) + ";\nCOMMIT;\nBEGIN;\n"
                + reclaimSql;
        this.aloneSql = schema.sql(Sql.ADVANCE_ALONE.replace("{reserve}", Sql.NOT_RESERVED));
        this.aloneCommitSql = aloneSql + ";\nCOMMIT";
        this.aloneContinueSql = schema.sql(Sql.ADVANCE_ALONE.replace("{reserve}", reserve)) + ";\nCOMMIT;\nBEGIN;\n"
                + reclaimSql;
        String slim = schema.sql(Sql.idleInTransaction(Sql.RECLAIM_CONTINUATION, idleInTransaction));
        this.advanceSlimContinueSql = schema.sql(Sql.ADVANCE.replace("{reserve}", reserve)) + ";\nCOMMIT;\nBEGIN;\n"
                + slim;
        this.aloneSlimContinueSql = schema.sql(Sql.ADVANCE_ALONE.replace("{reserve}", reserve))
                + ";\nCOMMIT;\nBEGIN;\n" + slim;
        this.advanceJoinCheckSql = advanceSql + ";\n" + schema.sql(JOIN_CHECK);
        this.aloneJoinCheckSql = aloneSql + ";\n" + schema.sql(JOIN_CHECK);
        this.limits = new SagaLimits(schema);
        for (int gate = 1; gate < 6; gate++) {
            boolean slots = (gate & 1) != 0;
            boolean rate = (gate & 2) != 0;
            boolean leased = (gate & 4) != 0;
            limitedClaims[gate] = LimitedClaim.of(schema, claim,
                    "r.saga = ? AND r.saga_version = ? AND r.status = 'RUNNABLE'"
                            + " AND " + Sql.EVERY_PRIORITY + " AND r.runnable_at <= " + Sql.DUE_NOW
                            + " AND " + Sql.NOT_RESERVED_NOW
                            + " ORDER BY r.priority DESC, r.runnable_at",
                    slots, rate, leased);
            limitedReclaims[gate] = LimitedClaim.of(schema, claim,
                    "r.id = ? AND r.status = 'RUNNABLE' AND r.runnable_at <= {now}", slots, rate, leased);
            // a limited run is reserved for its continuing worker too; a reclaim its limits refuse ends the
            // reservation in the same transaction (Worker), so that the run waits for a slot like any other
            limitedReclaimWaitingSql[gate] = waiting(limitedReclaims[gate].sql());
            limitedAdvanceContinueSql[gate] = schema.sql(Sql.ADVANCE.replace("{reserve}", reserve))
                    + ";\nCOMMIT;\nBEGIN;\n" + limitedReclaims[gate].sql();
            limitedAloneContinueSql[gate] = schema.sql(Sql.ADVANCE_ALONE.replace("{reserve}", reserve))
                    + ";\nCOMMIT;\nBEGIN;\n" + limitedReclaims[gate].sql();
        }
        this.postponeSql = schema.sql(Sql.POSTPONE);
        this.requestChildRollbacksSql = schema.sql(Sql.REQUEST_CHILD_ROLLBACKS);
        this.countOffSql = schema.sql(Sql.COUNT_OFF);
        this.childFailuresSql = schema.sql(Sql.CHILD_FAILURES);
        this.childResultsSql = schema.sql(Sql.CHILD_RESULTS);
        this.countUnstartedSql = schema.sql(Sql.COUNT_UNSTARTED);
        this.detachUnstartedSql = schema.sql(Sql.DETACH_UNSTARTED);
        this.probeSql = schema.sql(Sql.PROBE);
        this.runStatusesSql = schema.sql(Sql.RUN_STATUSES);
        this.eventsSql = schema.sql(Sql.EVENTS);
        this.attempts = new AttemptLog(schema, this.time);
        this.roundAdvances = new RoundAdvances(schema, this.time, this.localSagas);
    }

    public SchemaName schema() {
        return schema;
    }

    /** Failed attempts and parking in the log (the failure path only). */
    public AttemptLog attempts() {
        return attempts;
    }

    /** The time the statements decide by. */
    public Time time() {
        return time;
    }

    /**
     * Which sagas this store claims through their limits, with those limits: the engine's sagas that have limits in
     * the registry, read at start and at every probe.
     */
    public void limited(Map<String, SagaLimits.Limit> sagas) {
        this.limited = Map.copyOf(sagas);
    }

    /** The claim statement for {@code saga} as this store sends it (for EXPLAIN in tests and the benchmark). */
    public String claimSql(String saga) {
        return claimSql(limited.get(saga), null);
    }

    private String claimSql(SagaLimits.Limit limit, RateLease lease) {
        return limit == null ? claimSql : limitedClaims[gateOf(limit, lease)].sql();
    }

    /** Whether claims of {@code saga} go through its limits. */
    public boolean isLimited(String saga) {
        return limited.containsKey(saga);
    }

    /**
     * Which limited statements a saga with {@code limit} is claimed with: 1 slots, 2 rate tokens, 3 both; with a
     * token of {@code lease} (if not null) instead of a rate token, 4, or 5 with slots.
     */
    private static int gateOf(SagaLimits.Limit limit, RateLease lease) {
        return (limit.slots() ? 1 : 0) | (lease != null ? 4 : limit.rate() ? 2 : 0);
    }

    /** A token of the saga's lease for one claim, or null (none left, or none leased). */
    private RateLease takeLease(String saga, SagaLimits.Limit limit) {
        if (limit == null || !limit.rate()) {
            return null;
        }
        RateLease lease = leases.get(saga);
        return lease != null && lease.take() ? lease : null;
    }

    /**
     * For a saga whose rate window is large ({@link RateLease#size}): when this store's lease of its tokens is used
     * up or ran out, leases new ones in a transaction of its own, committed here, so that the next claims start on
     * them without writing a token each. Called before a transaction's first claim, with nothing else in it.
     */
    public void refillLease(Connection c, String saga) throws SQLException {
        SagaLimits.Limit limit = limited.get(saga);
        if (limit == null || !limit.rate() || RateLease.size(limit.rateLimit()) < 2) {
            return;
        }
        RateLease current = leases.get(saga);
        if (current != null && !current.spent() || !leasing.add(saga)) {
            return; // still usable, or another worker leases
        }
        try {
            RateLease lease = limits.reserve(c, saga, limit, time.bind()); // committed
            if (lease != null) {
                leases.put(saga, lease);
            }
        } finally {
            leasing.remove(saga);
        }
    }

    /** The claim of {@code saga} found its lease run out in the database's time: the next claim leases anew. */
    public void leaseRanOut(String saga) {
        leases.remove(saga);
    }

    /**
     * Locks the runnable run of version {@code version} of {@code saga} that is due first, writing its SEEN if it had
     * not started. Runs of other versions are left to engines that have them.
     */
    public ClaimedRun claim(Connection c, String saga, int version, String engine) throws SQLException {
        SagaLimits.Limit limit = limited.get(saga); // once: the probe may change it meanwhile
        RateLease lease = takeLease(saga, limit);
        ClaimedRun run;
        try (PreparedStatement ps = c.prepareStatement(claimSql(limit, lease))) {
            bindClaim(ps, saga, limit, lease, version, engine);
            run = readClaim(ps);
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
        if (isLimited(saga)) {
            throw new IllegalStateException("a limited saga is claimed one run at a time");
        }
        List<ClaimedRun> runs = new java.util.ArrayList<>(max);
        try (PreparedStatement ps = c.prepareStatement(roundClaimSql)) {
            OffsetDateTime now = time.bind();
            ps.setObject(1, now);
            ps.setString(2, saga);
            ps.setInt(3, version);
            ps.setObject(4, now);
            ps.setInt(5, max);
            ps.setString(6, engine);
            try (ResultSet rs = ps.executeQuery()) {
                for (ClaimedRun run = readClaim(c, rs); run != null; run = readClaim(c, rs)) {
                    runs.add(run);
                }
            }
        }
        return runs;
    }

    /** Binds {@link #claimSql(String)} (for EXPLAIN in tests and the benchmark). */
    public void bindClaim(PreparedStatement ps, String saga, int version, String engine) throws SQLException {
        bindClaim(ps, saga, limited.get(saga), null, version, engine);
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
    public ClaimedRun reclaim(Connection c, UUID runId, String saga, String engine) throws SQLException {
        return reclaim(c, runId, saga, engine, false);
    }

    /**
     * The reclaim of a continuing run that the reclaim in its commit's round trip found locked: another worker's
     * claim by saga read the run before that commit, found it reserved when it locked it and skipped it, but holds
     * its lock until its own transaction ends (PostgreSQL keeps the lock of a row that a re-check after the lock
     * rejected). Waits for that lock, {@link #RECLAIM_WAIT_MILLIS} at most: the caller's transaction has no lock to
     * wait for in turn. Returns null (the transaction rolled back) when the wait ran out.
     */
    public ClaimedRun reclaimWaiting(Connection c, UUID runId, String saga, String engine) throws SQLException {
        try {
            return reclaim(c, runId, saga, engine, true);
        } catch (SQLException e) {
            if (!"55P03".equals(e.getSQLState())) { // lock_not_available: the other transaction still runs
                throw e;
            }
            c.rollback();
            return null;
        }
    }

    private ClaimedRun reclaim(Connection c, UUID runId, String saga, String engine, boolean waiting)
            throws SQLException {
        SagaLimits.Limit limit = limited.get(saga);
        RateLease lease = takeLease(saga, limit);
        ClaimedRun run = null;
        try (PreparedStatement ps = c.prepareStatement(waiting
                ? (limit == null ? reclaimWaitingSql : limitedReclaimWaitingSql[gateOf(limit, lease)])
                : (limit == null ? reclaimSql : limitedReclaims[gateOf(limit, lease)].sql()))) {
            bindReclaim(ps, 0, saga, limit, lease, runId, engine, time.bind());
            run = waiting ? readCommitted(ps) : readClaim(ps); // waiting: the settings' result set comes first
        } finally {
            if (run == null && lease != null) {
                lease.giveBack();
            }
        }
        return run;
    }

    private void bindReclaim(PreparedStatement ps, int i, String saga, SagaLimits.Limit limit, RateLease lease,
            UUID runId, String engine, OffsetDateTime now) throws SQLException {
        if (limit != null) { // pick (run, now), then the gate
            ps.setObject(++i, runId);
            ps.setObject(++i, now);
            i = limitedReclaims[gateOf(limit, lease)].bind(ps, i, saga, limit, now, lease);
        } else {
            ps.setObject(++i, now);
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
    public void release(Connection c, UUID runId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                UPDATE {schema}.run SET reserved_until = NULL
                 WHERE id = (SELECT id FROM {schema}.run WHERE id = ? AND reserved_until IS NOT NULL
                               FOR UPDATE SKIP LOCKED)
                """))) {
            ps.setObject(1, runId);
            ps.executeUpdate();
        }
    }

    /** Locks a run again after its failed step was rolled back, unless another engine moved it on meanwhile. */
    public ClaimedRun reclaimUnchanged(Connection c, ClaimedRun run, String engine) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(reclaimUnchangedSql)) {
            ps.setObject(1, time.bind());
            ps.setObject(2, run.id());
            ps.setInt(3, run.version());
            ps.setString(4, engine);
            return readClaim(ps);
        }
    }

    private ClaimedRun readClaim(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            return readClaim(ps.getConnection(), rs);
        }
    }

    private ClaimedRun readClaim(Connection c, ResultSet rs) throws SQLException {
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
                rs.getObject("runnable_at", OffsetDateTime.class));
    }

    /**
     * What the claim read of the run's step instances. The claim's snapshot can predate the commit of the run version
     * it locked (a transaction that committed between the statement's start and its lock); the instances that
     * transaction wrote are then missing, and are read again here with a new snapshot. The step log's rows never
     * change, so what was seen is right.
     */
    private StepHistory history(Connection c, ResultSet rs) throws SQLException {
        UUID run = rs.getObject("id", UUID.class);
        int stepsDone = rs.getInt("steps_done");
        int[] iterations = ints(rs.getArray("iterations"));
        Array recentArray = rs.getArray("recent");
        int[] recent = recentArray == null ? new int[0] : ints(recentArray);
        Integer top = rs.getObject("recent_top", Integer.class);
        Integer rollbackSeq = rs.getObject("rollback_seq", Integer.class);
        Integer rollbackInstance = rs.getObject("rollback_instance", Integer.class);
        Integer rollbackIteration = rs.getObject("rollback_iteration", Integer.class);
        if (rs.getBoolean("rollback")) {
            if (rollbackSeq != null && rollbackSeq >= 0 && rollbackInstance == null) {
                try (PreparedStatement ps = c.prepareStatement(schema.sql(Sql.INSTANCE_AT))) {
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
        try (PreparedStatement ps = c.prepareStatement(schema.sql(Sql.INSTANCES_BEFORE))) {
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

    private static int[] ints(Array array) throws SQLException {
        return Arrays.stream((Integer[]) array.getArray()).mapToInt(Integer::intValue).toArray();
    }

    /**
     * Writes messages, their EMITTED events and one run per saga registered for each topic.
     *
     * @param scope the emitting run's lineage, or null for messages on the global scope
     * @return the sagas that got new runs, with how many each; runs in {@code scope} are the parent's children
     * @throws SQLException with SQLSTATE {@value #KEY_TAKEN} when an emission's idempotency key was taken meanwhile
     *         by a transaction that committed after the caller looked it up: a retry finds the holder
     */
    public Map<String, Integer> emit(Connection c, UUID[] scope, UUID parentId, Integer parentSeq,
            String saga,
            String engine, String step, List<Emission> emissions) throws SQLException {
        Emitted emitted = emitAll(c, scope, parentId, parentSeq, saga, engine, step, emissions);
        if (!emitted.duplicates().isEmpty()) {
            Emission e = emissions.get(emitted.duplicates().get(0));
            throw new SQLException("The idempotency key '" + e.idempotencyKey() + "' of topic '" + e.topic()
                    + "' was taken by a launch that committed meanwhile", KEY_TAKEN);
        }
        return emitted.created();
    }

    /** A serialization failure: the transaction is retried as database trouble, never rolled back as a failure. */
    public static final String KEY_TAKEN = "40001";

    /**
     * What an emit wrote: the runs created per saga, and the emissions (indexes into the list) whose idempotency key
     * another message of the topic already held, which were not written.
     */
    public record Emitted(Map<String, Integer> created, List<Integer> duplicates) {
    }

    /** {@link #emitAll} of one message without keys: scalar parameters ({@link Sql#EMIT_ONE}). */
    private Emitted emitOne(Connection c, UUID[] scope, UUID parentId, Integer parentSeq, String saga, String engine,
            String step, Emission e) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(emitOneSql)) {
            Array scopeArray = scope == null ? null : c.createArrayOf("uuid", scope);
            OffsetDateTime now = time.bind();
            int i = 0;
            ps.setObject(++i, e.messageId());
            ps.setString(++i, e.topic());
            ps.setString(++i, e.payload());
            ps.setObject(++i, now);
            ps.setObject(++i, e.messageId());
            ps.setString(++i, saga);
            ps.setString(++i, engine);
            ps.setString(++i, step);
            setArrayOrNull(ps, ++i, scopeArray);
            ps.setObject(++i, e.messageId());
            ps.setString(++i, e.context());
            ps.setObject(++i, e.messageId());
            setArrayOrNull(ps, ++i, scopeArray);
            ps.setObject(++i, e.messageId());
            ps.setObject(++i, parentId, Types.OTHER);
            setInteger(ps, ++i, parentSeq);
            ps.setString(++i, e.context());
            ps.setObject(++i, e.due());
            ps.setObject(++i, now);
            ps.setInt(++i, e.priority());
            ps.setString(++i, e.topic());
            ps.setString(++i, localSagas);
            ps.setString(++i, e.topic());
            ps.setString(++i, e.topic());
            return emitted(ps, saga, step);
        }
    }

    /**
     * Reads what an emit statement returns: per saga the runs it got, {@code '#topic'} for a topic nobody handles,
     * {@code '!'} with the ordinal of a message whose idempotency key was taken.
     */
    private Emitted emitted(PreparedStatement ps, String saga, String step) throws SQLException {
        Map<String, Integer> created = new HashMap<>();
        List<String> unhandled = new ArrayList<>();
        List<Integer> duplicates = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                String name = rs.getString(1);
                if (name.equals("!")) {
                    duplicates.add(rs.getInt(2) - 1);
                } else if (name.startsWith("#")) {
                    unhandled.add(name.substring(1));
                } else {
                    created.put(name, rs.getInt(2));
                }
            }
        }
        unhandled(unhandled, saga, step);
        return new Emitted(created, duplicates);
    }

    /** Writes messages as {@link #emit}, reporting those whose idempotency key was taken instead of failing. */
    public Emitted emitAll(Connection c, UUID[] scope, UUID parentId, Integer parentSeq, String saga,
            String engine, String step, List<Emission> emissions) throws SQLException {
        Emitted emitted = emitUnlabelled(c, scope, parentId, parentSeq, saga, engine, step, emissions);
        if (emissions.stream().anyMatch(Emission::labelled)) {
            label(c, emissions);
        }
        return emitted;
    }

    /**
     * Business keys and tags (schema version 20), in a statement of their own that only launches carrying them pay
     * for. A message not written (its idempotency key was taken) is not found by its new id: nothing changes.
     */
    private void label(Connection c, List<Emission> emissions) throws SQLException {
        List<Emission> labelled = emissions.stream().filter(Emission::labelled).toList();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                UPDATE {schema}.message m
                   SET business_key = u.business_key,
                       tags = CASE WHEN u.tags IS NULL THEN NULL
                                   ELSE ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)) END
                  FROM unnest(?::uuid[], ?::text[], ?::text[]) AS u(id, business_key, tags)
                 WHERE m.id = u.id
                """))) {
            ps.setArray(1, c.createArrayOf("uuid", labelled.stream().map(Emission::messageId).toArray()));
            ps.setArray(2, c.createArrayOf("text", labelled.stream().map(Emission::businessKey).toArray()));
            ps.setArray(3, c.createArrayOf("text", labelled.stream()
                    .map(e -> e.tags().isEmpty() ? null : Json.defaultMapper().valueToTree(e.tags()).toString())
                    .toArray()));
            ps.executeUpdate();
        }
    }

    private Emitted emitUnlabelled(Connection c, UUID[] scope, UUID parentId, Integer parentSeq, String saga,
            String engine, String step, List<Emission> emissions) throws SQLException {
        if (emissions.size() == 1 && emissions.getFirst().idempotencyKey() == null
                && emissions.getFirst().orderingKey() == null) {
            return emitOne(c, scope, parentId, parentSeq, saga, engine, step, emissions.getFirst());
        }
        int n = emissions.size();
        UUID[] ids = new UUID[n];
        String[] topics = new String[n];
        String[] payloads = new String[n];
        String[] contexts = new String[n];
        OffsetDateTime[] dues = new OffsetDateTime[n];
        String[] idempotencyKeys = new String[n];
        Integer[] priorities = new Integer[n];
        String[] orderingKeys = new String[n];
        for (int i = 0; i < n; i++) {
            Emission e = emissions.get(i);
            ids[i] = e.messageId();
            topics[i] = e.topic();
            payloads[i] = e.payload();
            contexts[i] = e.context();
            dues[i] = e.due();
            idempotencyKeys[i] = e.idempotencyKey();
            priorities[i] = e.priority();
            orderingKeys[i] = e.orderingKey();
        }
        try (PreparedStatement ps = c.prepareStatement(emitSql)) {
            Array scopeArray = scope == null ? null : c.createArrayOf("uuid", scope);
            int i = 0;
            ps.setArray(++i, c.createArrayOf("uuid", ids));
            ps.setArray(++i, c.createArrayOf("text", topics));
            ps.setArray(++i, c.createArrayOf("text", payloads));
            ps.setArray(++i, c.createArrayOf("text", contexts));
            ps.setArray(++i, c.createArrayOf("timestamptz", dues));
            ps.setArray(++i, c.createArrayOf("text", idempotencyKeys));
            ps.setArray(++i, c.createArrayOf("integer", priorities));
            ps.setArray(++i, c.createArrayOf("text", orderingKeys));
            OffsetDateTime now = time.bind();
            ps.setObject(++i, now);
            ps.setString(++i, saga);
            ps.setString(++i, engine);
            ps.setString(++i, step);
            setArrayOrNull(ps, ++i, scopeArray);
            setArrayOrNull(ps, ++i, scopeArray);
            ps.setObject(++i, parentId, Types.OTHER);
            if (parentSeq == null) {
                ps.setNull(++i, Types.INTEGER);
            } else {
                ps.setInt(++i, parentSeq);
            }
            ps.setObject(++i, now);
            ps.setString(++i, localSagas);
            return emitted(ps, saga, step);
        }
    }

    /** The message holding an idempotency key on a topic, or null (read with a new snapshot). */
    public UUID messageWithKey(Connection c, String topic, String idempotencyKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "SELECT id FROM {schema}.message WHERE topic = ? AND idempotency_key = ?"))) {
            ps.setString(1, topic);
            ps.setString(2, idempotencyKey);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getObject(1, UUID.class) : null;
            }
        }
    }

    private static void setArrayOrNull(PreparedStatement ps, int index, Array array) throws SQLException {
        if (array == null) {
            ps.setNull(index, Types.ARRAY);
        } else {
            ps.setArray(index, array);
        }
    }

    /**
     * Appends the run's events, moves the run to its new state, and when the run finished, counts it off at its
     * parent (waking the parent when it was the last child).
     *
     * @return the parent, when this run finished and had one: runnable again, committed here, or still waiting
     * @throws SQLException with SQLSTATE {@value #CANCELLED} when {@code next.checkCancellation()} and the run's scope
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
        return (ClaimedRun) advance(c, reclaim ? Tail.CONTINUE : Tail.COMMIT, run, engine, entries, next);
    }

    /** What is sent after the advance in the same round trip. */
    private enum Tail {
        NONE, COMMIT, CONTINUE, COMMIT_UNLESS_JOINED
    }

    /** SQLSTATE of {@code assert_no_pending_members}: a join membership of the messages is pending (version 19). */
    static final String JOINS_PENDING = "CP004";
    /** The savepoint between a finishing advance and its join check. */
    private static final String JOIN_CHECK_SAVEPOINT = "coop_join_check";
    private static final String JOIN_CHECK = "SAVEPOINT " + JOIN_CHECK_SAVEPOINT
            + ";\nSELECT {schema}.assert_no_pending_members(?::uuid[]);\nCOMMIT";

    private Object advance(Connection c, Tail tail, ClaimedRun run, String engine,
            List<LogEntry> entries, Advance next) throws SQLException {
        boolean finished = next.status().isFinished();
        UUID countOffAt = finished && run.awaited() ? run.parentId() : null;
        boolean alone = countOffAt == null;
        SagaLimits.Limit limit = limited.get(run.saga()); // once: the probe may change it meanwhile
        RateLease lease = tail == Tail.CONTINUE ? takeLease(run.saga(), limit) : null;
        // the continuation of a step that wrote one happy-path instance: what the run's claim read stays true but for
        // the run's own row and that instance, so its reclaim locks and reads the row alone
        boolean slim = tail == Tail.CONTINUE && limit == null && !run.rollback() && !next.rollback()
                && next.instance() != null && next.instanceSeq() == run.stepsDone()
                && next.stepsDone() == run.stepsDone() + 1;
        String sql = switch (tail) {
            case NONE -> alone ? aloneSql : advanceSql;
            case COMMIT -> alone ? aloneCommitSql : advanceCommitSql;
            case CONTINUE -> limit != null
                    ? (alone ? limitedAloneContinueSql : limitedAdvanceContinueSql)[gateOf(limit, lease)]
                    : slim
                            ? (alone ? aloneSlimContinueSql : advanceSlimContinueSql)
                            : (alone ? aloneContinueSql : advanceContinueSql);
            case COMMIT_UNLESS_JOINED -> alone ? aloneJoinCheckSql : advanceJoinCheckSql;
        };
        // a claimed run is runnable: staying so now, its update would set status and due time to what they are
        boolean quiet = next.status() == RunStatus.RUNNABLE && next.runnableAt() == null
                && next.delayMillis() == 0;
        if (quiet) {
            sql = quietSql.computeIfAbsent(sql, full -> Sql.quiet(schema, full));
        }
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            OffsetDateTime now = time.bind();
            int i = bindAdvance(ps, 0, new Move(run, entries, next), engine, quiet, now);
            if (!alone) {
                i = bindCountOff(ps, i, next.status(), countOffAt, engine, run.claimedAt(), now);
            }
            switch (tail) {
                case NONE -> {
                    return readCounted(ps);
                }
                case COMMIT_UNLESS_JOINED -> {
                    ps.setArray(++i, c.createArrayOf("uuid", new UUID[]{run.messageId()}));
                    return committedUnlessJoined(ps);
                }
                case CONTINUE -> {
                    if (slim) {
                        ps.setObject(++i, now);
                        ps.setString(++i, engine);
                        ps.setObject(++i, run.id());
                        ps.setInt(++i, run.version() + 1); // the version this advance leaves
                        ps.setObject(++i, now);
                        return readCommitted(ps, rs -> continued(rs, run, next));
                    }
                    bindReclaim(ps, i, run.saga(), limit, lease, run.id(), engine, now); // as in reclaim()
                    ClaimedRun again = readCommitted(ps);
                    if (again == null && lease != null) {
                        lease.giveBack();
                    }
                    return again;
                }
                default -> {
                    return readCommitted(ps);
                }
            }
        }
    }

    /** An advance to write: the run as its claim locked it, the events it appends, the state it moves to. */
    public record Move(ClaimedRun run, List<LogEntry> entries, Advance next) {
    }

    /**
     * The advances of runs without a parent to count off, each staying runnable now or finishing, and with
     * {@code commit} the COMMIT, in one statement and one round trip: what a round defers (to its end, or until a step
     * uses its connection). If it fails, the transaction must be rolled back.
     *
     * @param finished the messages of runs that finished in the transaction (here or in an earlier call): with
     *        {@code commit}, the COMMIT waits for the check that none is a pending join member
     * @return false when one is: the transaction is open, the advances written, for the caller to settle the
     *         memberships and commit
     */
    public boolean advanceAll(Connection c, String engine, List<Move> moves, boolean commit, List<UUID> finished)
            throws SQLException {
        return roundAdvances.write(c, moves.get(0).run().saga(), engine, moves, commit, finished);
    }

    /** Binds the parameters of one advance (its own part, before any count-off) from {@code i}; returns the last. */
    private int bindAdvance(PreparedStatement ps, int i, Move move, String engine, boolean quiet, OffsetDateTime now)
            throws SQLException {
        ClaimedRun run = move.run();
        Advance next = move.next();
        List<LogEntry> entries = move.entries();
        String[] types = new String[entries.size()];
        String[] steps = new String[entries.size()];
        String[] exceptions = new String[entries.size()];
        String[] contexts = new String[entries.size()];
        for (int k = 0; k < entries.size(); k++) {
            types[k] = entries.get(k).type().name();
            steps[k] = entries.get(k).step();
            exceptions[k] = entries.get(k).exception();
            contexts[k] = entries.get(k).context();
        }
        boolean finished = next.status().isFinished();
        ps.setObject(++i, run.messageId());
        ps.setString(++i, run.saga());
        ps.setString(++i, engine);
        ps.setArray(++i, ps.getConnection().createArrayOf("uuid", run.lineage()));
        ps.setObject(++i, run.claimedAt());
        ps.setArray(++i, ps.getConnection().createArrayOf("text", types));
        ps.setArray(++i, ps.getConnection().createArrayOf("text", steps));
        ps.setArray(++i, ps.getConnection().createArrayOf("text", exceptions));
        ps.setArray(++i, ps.getConnection().createArrayOf("text", contexts));
        i = bindInstance(ps, i, next, entries);
        if (!quiet) {
            ps.setString(++i, next.status().name());
        }
        ps.setString(++i, next.rollback() ? "ROLLBACK" : "HAPPY");
        ps.setInt(++i, next.stepIndex());
        ps.setString(++i, next.nextStep());
        ps.setString(++i, next.finalStep());
        ps.setInt(++i, next.stepsDone());
        if (next.iterations() == null) {
            ps.setNull(++i, Types.ARRAY);
        } else {
            ps.setArray(++i,
                    ps.getConnection().createArrayOf("integer", Arrays.stream(next.iterations()).boxed().toArray()));
        }
        ps.setInt(++i, next.attempt());
        ps.setInt(++i, next.pendingChildren());
        ps.setBoolean(++i, next.keepFailedChildren());
        ps.setInt(++i, next.pendingChildren());
        ps.setObject(++i, now);
        setInteger(ps, ++i, next.rollbackSeq());
        ps.setString(++i, next.rollbackStage());
        ps.setString(++i, next.rollbackCause());
        if (!quiet) {
            ps.setObject(++i, next.runnableAt());
            ps.setObject(++i, next.runnableAt());
            ps.setObject(++i, now);
            ps.setLong(++i, next.delayMillis());
            ps.setString(++i, next.status().name());
            ps.setObject(++i, now);
            ps.setLong(++i, next.delayMillis());
        }
        ps.setString(++i, next.context());
        ps.setString(++i, next.result());
        setInteger(ps, ++i, next.finallyDone());
        setInteger(ps, ++i, next.finallyDone());
        ps.setObject(++i, run.claimedAt());
        ps.setBoolean(++i, finished);
        ps.setObject(++i, now);
        ps.setString(++i, next.failure());
        ps.setObject(++i, run.id());
        ps.setString(++i, run.xact());
        ps.setBoolean(++i, next.checkCancellation());
        ps.setString(++i, localSagas);
        return i;
    }

    /** Binds the executed instance that the advance's first event (its SUSPENDED) carries, or nulls (none). */
    private static int bindInstance(PreparedStatement ps, int i, Advance next, List<LogEntry> entries)
            throws SQLException {
        boolean carried = next.instance() != null;
        if (carried && (entries.isEmpty() || entries.get(0).type() != dev.coop.inspect.EventType.SUSPENDED)) {
            throw new IllegalStateException("an executed instance is recorded by its SUSPENDED, written first");
        }
        setInteger(ps, ++i, carried ? next.instanceSeq() : null);
        setInteger(ps, ++i, next.instance());
        setInteger(ps, ++i, carried ? next.instanceIteration() : null);
        return i;
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

    private static Boolean committedUnlessJoined(PreparedStatement ps) throws SQLException {
        try {
            boolean isResultSet = ps.execute();
            while (isResultSet || ps.getUpdateCount() != -1) {
                if (isResultSet) {
                    ps.getResultSet().close();
                }
                isResultSet = ps.getMoreResults();
            }
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

    /**
     * Reads the results of advance; COMMIT[; BEGIN; reclaim], or of a waiting reclaim (its settings, the reclaim,
     * the settings again): the run in the second result set, or null.
     */
    private ClaimedRun readCommitted(PreparedStatement ps) throws SQLException {
        return readCommitted(ps, rs -> readClaim(ps.getConnection(), rs));
    }

    /** What reads the claim's result set. */
    private interface ClaimReader {
        ClaimedRun read(ResultSet rs) throws SQLException;
    }

    /**
     * The run as the slim reclaim of its continuation found it ({@link Sql#RECLAIM_CONTINUATION}): its row as read
     * now; the message, lineage and parent as the previous claim read them (they never change); the history as the
     * previous claim read it plus the instance the advance wrote. Null when it was not locked.
     */
    private static ClaimedRun continued(ResultSet rs, ClaimedRun run, Advance next) throws SQLException {
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
                rs.getObject(21, OffsetDateTime.class), rs.getString(23), rs.getObject(20, OffsetDateTime.class));
    }

    private ClaimedRun readCommitted(PreparedStatement ps, ClaimReader reader) throws SQLException {
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

    /** A parent counted off: whether it became runnable or committed (then count it off at its parent too). */
    public record Counted(UUID id, String saga, RunStatus status, UUID messageId, UUID parentId) {
    }

    /** Counts a parent committed by its last child off at its own parent. */
    public Counted countOff(Connection c, UUID parentId, RunStatus childStatus, String engine,
            OffsetDateTime startedAt) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(countOffSql)) {
            bindCountOff(ps, 0, childStatus, parentId, engine, startedAt, time.bind());
            return readCounted(ps);
        }
    }

    private static int bindCountOff(PreparedStatement ps, int i, RunStatus childStatus, UUID parentId, String engine,
            OffsetDateTime startedAt, OffsetDateTime now) throws SQLException {
        for (int k = 0; k < 4; k++) {
            ps.setString(++i, childStatus.name());
        }
        ps.setObject(++i, now); // finished_at of a parent committed here
        ps.setObject(++i, now); // runnable_at of a parent woken here
        ps.setObject(++i, parentId, Types.OTHER);
        ps.setString(++i, engine);
        ps.setObject(++i, startedAt);
        return i;
    }

    private static Counted readCounted(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) {
                return null;
            }
            return counted(rs);
        }
    }

    private static Counted counted(ResultSet rs) throws SQLException {
        return new Counted(rs.getObject(1, UUID.class), rs.getString(2), RunStatus.valueOf(rs.getString(3)),
                rs.getObject(4, UUID.class), rs.getObject(5, UUID.class));
    }

    /** The SQLSTATE raised when a step would commit in a cancelled scope. */
    public static final String CANCELLED = "CP001";

    private static void setInteger(PreparedStatement ps, int index, Integer value) throws SQLException {
        if (value == null) {
            ps.setNull(index, Types.INTEGER);
        } else {
            ps.setInt(index, value);
        }
    }

    /**
     * Asks the runs caused by step instance {@code seq} of {@code run} to roll back, logging ROLLBACK_EMITTED.
     *
     * @return the runs asked, per saga; the caller waits for all of them
     */
    public Map<String, Integer> requestChildRollbacks(Connection c, ClaimedRun run, String engine, String step,
            String cause, int seq, String parentContext) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(requestChildRollbacksSql)) {
            ps.setObject(1, run.id());
            ps.setInt(2, seq);
            ps.setString(3, run.saga());
            ps.setString(4, engine);
            ps.setString(5, step);
            ps.setArray(6, c.createArrayOf("uuid", run.lineage()));
            ps.setString(7, cause);
            ps.setString(8, parentContext);
            ps.setString(9, cause);
            ps.setObject(10, time.bind());
            Map<String, Integer> woken = new HashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    woken.put(rs.getString(1), rs.getInt(2));
                }
            }
            return woken;
        }
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
            ps.setObject(1, now);
            ps.setLong(2, delayMillis);
            ps.setBoolean(3, seenKept);
            ps.setObject(4, now);
            ps.setObject(5, run.id());
            ps.setInt(6, run.version());
            ps.setString(7, seenKept ? run.xact() : null);
            ps.setString(8, seenKept ? run.xact() : null);
            ps.executeUpdate();
        }
    }

    /** Parks a run that met database trouble too often in a row; nothing happens if it moved meanwhile. */
    public boolean parkAfterRetries(Connection c, ClaimedRun run, String failure) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(Sql.PARK_AFTER_RETRIES))) {
            ps.setString(1, failure);
            ps.setObject(2, run.id());
            ps.setInt(3, run.version());
            return ps.executeUpdate() == 1;
        }
    }

    private void unhandled(List<String> topics, String saga, String step) {
        if (topics.isEmpty()) {
            return;
        }
        String where = saga == null ? "" : " (launched by step '" + step + "' of saga '" + saga + "')";
        if (requireHandlers) {
            throw new dev.coop.failure.CoopValidationException("No saga is registered for topic" + (topics.size() == 1
                    ? " '" + topics.getFirst() + "'"
                    : "s " + topics) + where + "; nothing would handle the message (strict topics are on: check"
                    + " the topic's name, or register a saga for it first)");
        }
        for (String topic : topics) {
            if (WARNED.size() < 10_000 && WARNED.add(schema.value() + "." + topic)) {
                log.warn("No saga is registered for topic '{}'{}: its messages are stored, and nothing handles them"
                        + " (warned once per topic)", topic, where);
            }
        }
    }

    /** The results of the runs of a message, by saga. */
    public List<dev.coop.RunResult> results(Connection c, MessageId message,
            com.fasterxml.jackson.databind.ObjectMapper mapper) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "SELECT id, saga, status, result, failure::text FROM {schema}.run WHERE message_id = ? ORDER BY saga"))) {
            ps.setObject(1, message.value());
            List<dev.coop.RunResult> results = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String failure = rs.getString(5);
                    results.add(new dev.coop.RunResult(message, rs.getString(2), rs.getObject(1, UUID.class),
                            RunStatus.valueOf(rs.getString(3)), rs.getString(4),
                            failure == null ? null : dev.coop.failure.Failure.fromJson(failure), mapper));
                }
            }
            return results;
        }
    }

    /** A run caused by a step instance: its result, or its failure. */
    public record ChildRun(UUID runId, UUID messageId, String saga, RunStatus status, String result,
            String failure) {
    }

    /** The runs caused by the given step instances of a run, in launch order. */
    public List<ChildRun> childRuns(Connection c, UUID runId, int[] seqs) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(childResultsSql)) {
            ps.setObject(1, runId);
            ps.setArray(2, c.createArrayOf("integer", Arrays.stream(seqs).boxed().toArray()));
            List<ChildRun> runs = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    runs.add(new ChildRun(rs.getObject(1, UUID.class), rs.getObject(2, UUID.class), rs.getString(3),
                            RunStatus.valueOf(rs.getString(4)), rs.getString(5), rs.getString(6)));
                }
            }
            return runs;
        }
    }

    /** How many awaited runs caused by step instance {@code seq} of the run have not started. */
    public int countUnstarted(Connection c, UUID runId, int seq) throws SQLException {
        return count(c, countUnstartedSql, runId, seq);
    }

    /** Stops awaiting the runs caused by step instance {@code seq} that have not started; returns how many. */
    public int detachUnstarted(Connection c, UUID runId, int seq) throws SQLException {
        return count(c, detachUnstartedSql, runId, seq);
    }

    /**
     * Settles the awaited runs caused by step instance {@code seq} that have not started, without running them
     * (their parent gave up); see {@link Sql#SETTLE_UNSTARTED}.
     *
     * @return the messages of the settled runs, one entry per run
     */
    public List<UUID> settleUnstarted(Connection c, UUID runId, int seq, String failure, String engine)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(Sql.SETTLE_UNSTARTED))) {
            ps.setObject(1, runId);
            ps.setInt(2, seq);
            ps.setString(3, failure);
            ps.setObject(4, time.bind());
            ps.setString(5, engine);
            ps.setString(6, failure);
            ps.setString(7, failure); // external tasks among them: timed out or cancelled
            ps.setObject(8, time.bind());
            ps.setObject(9, runId);
            List<UUID> messages = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    messages.add(rs.getObject(2, UUID.class));
                }
            }
            return messages;
        }
    }

    private static int count(Connection c, String sql, UUID runId, int seq) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setObject(1, runId);
            ps.setInt(2, seq);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** A run that did not commit, as its parent sees it. */
    public record ChildFailure(RunStatus status, String failure) {
    }

    /** The runs caused by the run's step instance {@code seq} that did not commit, oldest first. */
    public List<ChildFailure> childFailures(Connection c, UUID runId, int seq) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(childFailuresSql)) {
            ps.setObject(1, runId);
            ps.setInt(2, seq);
            List<ChildFailure> failures = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    failures.add(new ChildFailure(RunStatus.valueOf(rs.getString(1)), rs.getString(2)));
                }
            }
            return failures;
        }
    }

    /**
     * When a saga's runnable runs are due.
     *
     * @param firstMillis milliseconds until the earliest is due (zero or less: due now)
     * @param nextMillis milliseconds until the earliest due in the future, or null when none is
     */
    public record Due(long firstMillis, Long nextMillis) {
        /** The earlier of two versions' due times. */
        Due earliest(Due other) {
            Long next = nextMillis == null
                    ? other.nextMillis
                    : other.nextMillis == null ? nextMillis : Long.valueOf(Math.min(nextMillis, other.nextMillis));
            return new Due(Math.min(firstMillis, other.firstMillis), next);
        }
    }

    /**
     * For each saga with runnable runs of the given versions, when they are due (the earliest over its versions); two
     * index probes per saga version.
     */
    public Map<String, Due> probe(Connection c, EngineSagas sagas) throws SQLException {
        List<String> names = new ArrayList<>();
        List<Integer> versions = new ArrayList<>();
        for (String name : sagas.names()) {
            for (int version : sagas.versions(name)) {
                names.add(name);
                versions.add(version);
            }
        }
        try (PreparedStatement ps = c.prepareStatement(probeSql)) {
            OffsetDateTime now = time.bind();
            ps.setArray(1, c.createArrayOf("text", names.toArray()));
            ps.setArray(2, c.createArrayOf("integer", versions.toArray()));
            ps.setObject(3, now);
            ps.setObject(4, now);
            ps.setObject(5, now);
            Map<String, Due> due = new HashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    due.merge(rs.getString(1), new Due(rs.getLong(2), rs.getObject(3, Long.class)), Due::earliest);
                }
            }
            return due;
        }
    }

    /** The failure JSON of a cancellation of any scope in {@code lineage}, or null. */
    public String cancellation(Connection c, UUID[] lineage) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "SELECT failure::text FROM {schema}.cancellation WHERE scope_id = ANY(?) ORDER BY cardinality(lineage)"
                        + " LIMIT 1"))) {
            ps.setArray(1, c.createArrayOf("uuid", lineage));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    /** A cancellation of the scope (failure JSON, or null) and the engine's time, in one round trip. */
    public record Liveness(String cancellation, java.time.Instant now) {
    }

    public Liveness liveness(Connection c, UUID[] lineage) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "SELECT (SELECT failure::text FROM {schema}.cancellation WHERE scope_id = ANY(?)"
                        + " ORDER BY cardinality(lineage) LIMIT 1), {now}"))) {
            ps.setArray(1, c.createArrayOf("uuid", lineage));
            ps.setObject(2, time.bind());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Liveness(rs.getString(1), rs.getObject(2, OffsetDateTime.class).toInstant());
            }
        }
    }

    public boolean messageExists(Connection c, MessageId message) throws SQLException {
        try (PreparedStatement ps = c
                .prepareStatement(schema.sql("SELECT 1 FROM {schema}.message WHERE id = ?"))) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /** The status of every run of a message. */
    public List<RunStatus> runStatuses(Connection c, MessageId message) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(runStatusesSql)) {
            ps.setObject(1, message.value());
            List<RunStatus> statuses = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    statuses.add(RunStatus.valueOf(rs.getString(1)));
                }
            }
            return statuses;
        }
    }

    /** The events of the hierarchy a message belongs to, from its EMITTED on, in the order they were written. */
    /** The events of the hierarchy below {@code message} with an id above {@code afterId}, at most {@code limit}. */
    public List<Event> events(Connection c, MessageId message, long afterId, long limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(eventsSql)) {
            for (int i = 1; i <= 4; i++) {
                ps.setObject(i, message.value());
            }
            ps.setLong(5, afterId);
            ps.setLong(6, limit);
            return readEvents(ps);
        }
    }

    public static List<Event> readEvents(PreparedStatement ps) throws SQLException {
        List<Event> events = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                events.add(new Event(rs.getLong("id"), new MessageId(rs.getObject("message_id", UUID.class)),
                        EventType.valueOf(rs.getString("type")), rs.getString("saga"), rs.getString("engine"),
                        rs.getString("step"), new Lineage(Arrays.asList((UUID[]) rs.getArray("lineage").getArray())),
                        rs.getObject("created_at", OffsetDateTime.class),
                        rs.getObject("started_at", OffsetDateTime.class), rs.getString("exception"),
                        rs.getString("context"), rs.getObject("attempt", Integer.class)));
            }
        }
        return events;
    }
}
