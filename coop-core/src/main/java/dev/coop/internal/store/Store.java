package dev.coop.internal.store;

import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.inspect.Event;
import dev.coop.internal.EngineSagas;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Every statement Coop runs against its tables, one method per statement. All values are bind parameters; the
 * only text spliced in is the validated schema name. The statements live in one class per kind of work, which this
 * front door hands each call to: {@link RunClaims} (claims and reclaims, reading through {@link ClaimRows} and
 * {@link ClaimGates}), {@link Advances} (advances and count-offs), {@link Emits} (launches), {@link ChildQueries}
 * (a step's questions about the runs it caused) and {@link Probes} (reads that change nothing); a round's deferred
 * advances ({@link #advanceAll}) to {@link RoundAdvances}. An advance's parameters are bound by
 * {@link AdvanceBinding}.
 */
public final class Store {
    private final SchemaName schema;
    private final Time time;
    /** How long a continuing run stays reserved for its worker after its commit (schema version 15). */
    public static final int RESERVATION_MILLIS = 250;
    /** A round's deferred advances, in one statement ({@link #advanceAll}). */
    private final RoundAdvances roundAdvances;
    private final AttemptLog attempts;
    private final ClaimGates gates;
    private final RunClaims claims;
    private final ClaimRows rows;
    private final Advances advances;
    private final Emits emits;
    private final ChildQueries children;
    private final Probes probes;
    private final dev.coop.internal.guard.SessionReset sessionReset;

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
        String claim = ClaimSql.idleInTransaction(ClaimSql.CLAIM, idleInTransaction);
        String local = String.join(",", localSagas);
        this.schema = schema;
        this.time = java.util.Objects.requireNonNull(time, "time");
        this.attempts = new AttemptLog(schema, this.time);
        this.roundAdvances = new RoundAdvances(schema, this.time, local);
        this.gates = new ClaimGates(schema, this.time);
        this.rows = new ClaimRows(schema);
        NodeReads nodeReads = new NodeReads(schema); // one per engine: which workers answer is the engine's
        this.claims = new RunClaims(schema, this.time, claim,
                ClaimSql.idleInTransaction(ClaimSql.CLAIM_LOCK, idleInTransaction), gates, rows, nodeReads);
        String slim = schema.sql(ClaimSql.idleInTransaction(ClaimSql.RECLAIM_CONTINUATION, idleInTransaction));
        this.advances = new Advances(this, new AdvanceBinding(local), gates, claims, rows, slim);
        this.emits = new Emits(schema, this.time, requireHandlers, local);
        this.children = new ChildQueries(schema, this.time, local);
        this.probes = new Probes(schema, this.time, nodeReads);
        sharded(schema.citus()); // the claim and probe Citus can route
        this.sessionReset = new dev.coop.internal.guard.SessionReset(
                idleInTransaction == null ? 0 : idleInTransaction.toMillis());
    }

    /** What gives a step's connection back as Coop had it, after a step used it (as the claims set it up). */
    public dev.coop.internal.guard.SessionReset sessionReset() {
        return sessionReset;
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

    // claims and reclaims (RunClaims), through the sagas' limits (ClaimGates)

    /** Whether the schema has the Citus layout: the claims then go through {@link ShardedClaims}. */
    public void sharded(boolean citus) {
        claims.sharded(citus);
        probes.sharded(citus);
    }

    /** The Citus claim's statements as sent (for EXPLAIN in tests). */
    public List<String> shardedClaimSql() {
        return claims.shardedSql();
    }

    public void limited(Map<String, SagaLimits.Limit> sagas) {
        gates.limited(sagas);
    }

    public boolean isLimited(String saga) {
        return gates.isLimited(saga);
    }

    public void refillLease(Connection c, String saga) throws SQLException {
        gates.refillLease(c, saga);
    }

    public void leaseRanOut(String saga) {
        gates.leaseRanOut(saga);
    }

    public String claimSql(String saga) {
        return claims.claimSql(saga);
    }

    public void bindClaim(PreparedStatement ps, String saga, int version, String engine) throws SQLException {
        claims.bindClaim(ps, saga, version, engine);
    }

    public ClaimedRun claim(Connection c, String saga, int version, String engine) throws SQLException {
        return claims.claim(c, saga, version, engine);
    }

    public List<ClaimedRun> claimRound(Connection c, String saga, int version, String engine, int max)
            throws SQLException {
        return claims.claimRound(c, saga, version, engine, max);
    }

    public ClaimedRun reclaim(Connection c, UUID rootId, UUID runId, String saga, String engine)
            throws SQLException {
        return claims.reclaim(c, rootId, runId, saga, engine);
    }

    public ClaimedRun reclaimWaiting(Connection c, UUID rootId, UUID runId, String saga, String engine)
            throws SQLException {
        return claims.reclaimWaiting(c, rootId, runId, saga, engine);
    }

    public void release(Connection c, UUID rootId, UUID runId) throws SQLException {
        claims.release(c, rootId, runId);
    }

    /** See {@link RunClaims#hold}. */
    public void hold(Connection c, UUID runId, int millis) throws SQLException {
        claims.hold(c, runId, millis);
    }

    /** See {@link RunClaims#reclaimHeld}. */
    public ClaimedRun reclaimHeld(Connection c, ClaimedRun run, String engine) throws SQLException {
        return claims.reclaimHeld(c, run, engine);
    }

    public ClaimedRun reclaimUnchanged(Connection c, ClaimedRun run, String engine) throws SQLException {
        return claims.reclaimUnchanged(c, run, engine);
    }

    public int[] instancesBefore(Connection c, UUID run, int seq, int limit) throws SQLException {
        return rows.instancesBefore(c, run, seq, limit);
    }

    // launches (Emits)

    /** As {@link #emitAll}, failing with {@value #KEY_TAKEN} when an idempotency key was taken meanwhile. */
    public Map<String, Integer> emit(Connection c, UUID[] scope, UUID parentId, Integer parentSeq, String saga,
            String engine, String step, List<Emission> emissions) throws SQLException {
        return emit(c, scope, parentId, parentSeq, null, saga, engine, step, emissions);
    }

    /** As {@link #emit}, the runs in {@code scope} reached by cancellations from {@code cancelFrom} on (version 24). */
    public Map<String, Integer> emit(Connection c, UUID[] scope, UUID parentId, Integer parentSeq, Integer cancelFrom,
            String saga, String engine, String step, List<Emission> emissions) throws SQLException {
        return emits.emit(c, new Emits.Origin(scope, parentId, parentSeq, saga, engine, step, cancelFrom), emissions);
    }

    /** Writes messages, their EMITTED events and one run per saga for each topic (scope null: the global one). */
    public Emitted emitAll(Connection c, UUID[] scope, UUID parentId, Integer parentSeq, String saga,
            String engine, String step, List<Emission> emissions) throws SQLException {
        return emits.emitAll(c, new Emits.Origin(scope, parentId, parentSeq, saga, engine, step, null), emissions);
    }

    public UUID messageWithKey(Connection c, String topic, String idempotencyKey) throws SQLException {
        return emits.messageWithKey(c, topic, idempotencyKey);
    }

    /** A serialization failure: the transaction is retried as database trouble, never rolled back as a failure. */
    public static final String KEY_TAKEN = "40001";

    // advances and count-offs (Advances)

    public Counted advance(Connection c, ClaimedRun run, String engine, List<LogEntry> entries, Advance next)
            throws SQLException {
        return advances.advance(c, run, engine, entries, next);
    }

    public ClaimedRun advanceAndCommit(Connection c, ClaimedRun run, String engine, List<LogEntry> entries,
            Advance next, boolean reclaim) throws SQLException {
        return advances.advanceAndCommit(c, run, engine, entries, next, reclaim);
    }

    public boolean advanceFinishedAndCommit(Connection c, ClaimedRun run, String engine, List<LogEntry> entries,
            Advance next) throws SQLException {
        return advances.advanceFinishedAndCommit(c, run, engine, entries, next);
    }

    public Counted countOff(Connection c, Counted child, RunStatus childStatus, String engine,
            OffsetDateTime startedAt) throws SQLException {
        return advances.countOff(c, child, childStatus, engine, startedAt);
    }

    public void postpone(Connection c, ClaimedRun run, long delayMillis, boolean seenKept) throws SQLException {
        advances.postpone(c, run, delayMillis, seenKept);
    }

    public boolean parkAfterRetries(Connection c, ClaimedRun run, String failure) throws SQLException {
        return advances.parkAfterRetries(c, run, failure);
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

    /**
     * The advances of runs each staying runnable now or finishing, some finishing runs counting off at their awaited
     * parents, and those count-offs, one update per parent for all its children (parents locked in id order), in one
     * statement, without committing. If it fails, the transaction must be rolled back.
     *
     * @return each parent counted off: runnable again, committed here (then count it off at its own parent, and
     *         check its message's join memberships), or still waiting
     */
    public List<CountedOff> advanceAllCountingOff(Connection c, String engine, List<Move> moves) throws SQLException {
        return roundAdvances.writeCountingOff(c, moves.get(0).run().saga(), engine, moves);
    }

    /**
     * The check that no message in {@code finished} is a pending join member, and the COMMIT, in one round trip.
     *
     * @return false when one is: the transaction is open, for the caller to settle the memberships and commit
     */
    public boolean commitUnlessJoined(Connection c, List<UUID> finished) throws SQLException {
        return advances.commitUnlessJoined(c, finished);
    }

    /** The SQLSTATE raised when a step would commit in a cancelled scope. */
    public static final String CANCELLED = "CP001";

    public static void setInteger(PreparedStatement ps, int index, Integer value) throws SQLException {
        if (value == null) {
            ps.setNull(index, Types.INTEGER);
        } else {
            ps.setInt(index, value);
        }
    }

    // the runs a step caused (ChildQueries)

    public Map<String, Integer> requestChildRollbacks(Connection c, ClaimedRun run, String engine, String step,
            String cause, int seq, String parentContext) throws SQLException {
        return children.requestChildRollbacks(c, run, engine, step, cause, seq, parentContext);
    }

    public List<dev.coop.RunResult> results(Connection c, MessageId message,
            com.fasterxml.jackson.databind.ObjectMapper mapper) throws SQLException {
        return children.results(c, message, mapper);
    }

    public List<ChildRun> childRuns(Connection c, UUID runId, int[] seqs) throws SQLException {
        return children.childRuns(c, runId, seqs);
    }

    public int countUnstarted(Connection c, UUID runId, int seq) throws SQLException {
        return children.countUnstarted(c, runId, seq);
    }

    /** {@code rootId}: the run's hierarchy (Citus routes by it). */
    public int detachUnstarted(Connection c, UUID rootId, UUID runId, int seq) throws SQLException {
        return children.detachUnstarted(c, rootId, runId, seq);
    }

    public List<UUID> settleUnstarted(Connection c, UUID rootId, UUID runId, int seq, String failure,
            String engine) throws SQLException {
        return children.settleUnstarted(c, rootId, runId, seq, failure, engine);
    }

    public List<ChildFailure> childFailures(Connection c, UUID runId, int seq) throws SQLException {
        return children.childFailures(c, runId, seq);
    }

    // reads that change nothing (Probes)

    public Map<String, Due> probe(Connection c, EngineSagas sagas) throws SQLException {
        return probes.probe(c, sagas);
    }

    /** The cancellation reaching {@code scope} (scopes of hierarchy {@code root}), or null. */
    public String cancellation(Connection c, UUID root, UUID[] scope) throws SQLException {
        return probes.cancellation(c, root, scope);
    }

    public Liveness liveness(Connection c, UUID root, UUID[] scope) throws SQLException {
        return probes.liveness(c, root, scope);
    }

    public boolean messageExists(Connection c, MessageId message) throws SQLException {
        return probes.messageExists(c, message);
    }

    public List<RunStatus> runStatuses(Connection c, MessageId message) throws SQLException {
        return probes.runStatuses(c, message);
    }

    public List<Event> events(Connection c, MessageId message, long afterId, long limit) throws SQLException {
        return probes.events(c, message, afterId, limit);
    }

    public static List<Event> readEvents(PreparedStatement ps) throws SQLException {
        return Probes.readEvents(ps);
    }

}
