package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The claim by saga on Citus (docs/guide/citus.md, "The claim"), where {@code run} is distributed by {@code root_id}
 * and Citus refuses a {@code FOR UPDATE SKIP LOCKED} that reads more than one shard. The claim is two steps: a read of
 * a few due runs of the saga without a lock ({@link #CANDIDATES}: one task per shard, merged by the coordinator in
 * claim order; in a transaction of its own, so that the step's transaction never holds connections to other workers),
 * then the lock of one of them by its root and id ({@link #LOCK}: routed to the one shard that holds
 * it), the next candidate when another engine took it first. Every statement of the claimed step names the root as a
 * bound value (never {@code = r.root_id}): Citus routes a statement to one shard only when each distributed table in
 * it is filtered by a constant root. The lock re-checks every condition of the claim, so a candidate that another
 * engine advanced, reserved or finished after the read is not claimed: the read is only a hint.
 *
 * <p>
 * Plain PostgreSQL never gets here: the store picks this class only when the engine found the Citus layout at start
 * ({@link CitusLayout#isCitus}); its claim stays {@link SplitClaim} there.
 */
final class ShardedClaims {
    /**
     * How many candidates one read returns. When every one of them is locked (held by steps in flight, or claimed by
     * another engine first), the claim reads the next ones ({@code OFFSET}), so that runs held in long steps never
     * hide the due runs behind them; {@link #MAX_PAGES} bounds one claim's reads.
     */
    static final int CANDIDATES_PER_CLAIM = 8;
    /** At most this many pages of candidates per claim (then the claim finds nothing and the engine polls again). */
    static final int MAX_PAGES = 32;

    /**
     * The due runs of a saga, first due first, without a lock, each with the name of its shard (evaluated on the
     * worker, which {@link ShardNodes} maps to the worker). Parameters: saga, version, {now}, limit, offset.
     */
    static final String CANDIDATES = """
            SELECT r.root_id, r.id, r.tableoid::regclass::text FROM {schema}.run r
             WHERE r.saga = ? AND r.saga_version = ? AND r.status = 'RUNNABLE' AND {every}
               AND r.runnable_at <= {due} AND {notReserved}
             ORDER BY r.priority DESC, r.runnable_at
             LIMIT ? OFFSET ?
            """.replace("{every}", ClaimSql.EVERY_PRIORITY).replace("{due}", ClaimSql.DUE_NOW)
            .replace("{notReserved}", ClaimSql.NOT_RESERVED_NOW);

    /** The lock's selection of a candidate: the claim's conditions again. Parameters: root, id, saga, version, {now}. */
    private static final String BY_SAGA = "r.root_id = ? AND r.id = ? AND r.saga = ? AND r.saga_version = ?"
            + " AND r.status = 'RUNNABLE' AND r.runnable_at <= " + ClaimSql.DUE_NOW + " AND "
            + ClaimSql.NOT_RESERVED_NOW;
    /** The reclaim's selection of a run by id. Parameters: root, id, {now}. */
    private static final String BY_ID = "r.root_id = ? AND r.id = ? AND r.status = 'RUNNABLE' AND r.runnable_at <= "
            + ClaimSql.DUE_NOW;
    /** The reclaim of a run whose failed step was rolled back, unless it moved on. Parameters: root, id, version. */
    private static final String UNCHANGED = "r.root_id = ? AND r.id = ? AND r.status = 'RUNNABLE' AND r.version = ?";

    /**
     * {@link ClaimSql#CLAIM_LOCK} with the cancellation's root bound. Parameters: {now}, engine, root (the
     * cancellation), then the selection's.
     */
    static final String LOCK = lockOf(ClaimSql.CLAIM_LOCK);

    /** {@code lock} ({@link ClaimSql#CLAIM_LOCK}, its timeout set or not) with the cancellation's root bound. */
    static String lockOf(String lock) {
        return bound(lock, "x.root_id = r.root_id", "x.root_id = ?::uuid");
    }

    /**
     * Sent before the lock, in its round trip: the transaction's id on the coordinator. The lock is routed to the
     * worker, where {@code pg_current_xact_id()} names the worker's own transaction; the advance's guard is evaluated on
     * the coordinator ({@link AdvanceSql#GUARD}), so the claim is remembered by the coordinator's.
     */
    private static final String COORDINATOR_XACT = "SELECT pg_current_xact_id()::text;\n";

    /**
     * Sent first in the lock's round trip: a share lock on the distribution metadata of the candidate's {@code run}
     * shard, on the coordinator, held until the claim's transaction ends. A shard move ({@code
     * citus_move_shard_placement}) takes that lock exclusively for the co-located group while it copies, so the move
     * waits for the steps in flight on the group, and a claim waits for a move under way. Citus takes it for writes
     * but not for a {@code SELECT ... FOR UPDATE}: without it a move could run between a step's lock and its first
     * write, the step's later statements went to the new placement, where nothing held the run, another engine
     * claimed the run too, and one of the two bodies ran in vain (docs/guide/citus.md, "Faults"). Taken through
     * {@link CitusLayout#LOCK_RUN_SHARD}: Citus lets only the table's owner take it, and the engines' role need not
     * own Coop's tables. Parameter: the candidate's root.
     */
    static final String SHARD_LOCK = "SELECT {schema}.lock_run_shard(?::uuid);\n";

    /** The refusal {@link #endAttempts} read, set again in the claim's next transaction. Parameter: the refusal. */
    private static final String KEEP_REFUSAL = "SELECT set_config('coop.limit_wait', ?, true)";

    /**
     * {@link ClaimSql#CLAIMED_SEEN} on Citus: the SEEN written unless one exists by the unique index
     * {@code event_seen} ({@link CitusLayout}), not by a {@code NOT EXISTS} over {@code event}. An {@code INSERT ...
     * SELECT} that reads a distributed table runs on the worker, whose {@code event_id_seq} has a range of its own
     * (the node's group in the high bits), so the SEEN's id came after every later event of the run and the log was
     * out of order; Citus evaluates an {@code INSERT ... VALUES}' defaults on the coordinator, as every other event's.
     * Parameters: message id, saga, engine, lineage, root; root, message id.
     */
    static final String CLAIMED_SEEN = """
            WITH seen AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, lineage, root_id)
              VALUES (?::uuid, 'SEEN', ?, ?, ?::uuid[], ?::uuid)
              ON CONFLICT (root_id, message_id, saga) WHERE type = 'SEEN' DO NOTHING
            )
            SELECT {message}, NULL::int[] AS recent, NULL::int AS recent_top,
                   NULL::int AS rollback_instance, NULL::int AS rollback_iteration
              FROM {schema}.message m WHERE m.root_id = ?::uuid AND m.id = ?::uuid
            """.replace("{message}", ClaimSql.CLAIMED_MESSAGE);

    private final String candidatesSql;
    private final String lockBySagaSql;
    private final String lockByIdSql;
    private final String lockUnchangedSql;
    private final String seenSql;
    private final String shardLockSql;
    private final SplitClaim split;
    private final NodeReads nodeReads;
    private final ShardNodes shardNodes;

    /** @param lock {@link #LOCK} with its idle-in-transaction timeout set, before its schema and selection */
    ShardedClaims(SchemaName schema, String lock, SplitClaim split, NodeReads nodeReads) {
        this.nodeReads = nodeReads;
        this.shardNodes = new ShardNodes(schema);
        this.candidatesSql = schema.sql(CANDIDATES);
        this.lockBySagaSql = schema.sql(lock.formatted(BY_SAGA));
        this.lockByIdSql = schema.sql(lock.formatted(BY_ID));
        this.lockUnchangedSql = schema.sql(lock.formatted(UNCHANGED));
        this.seenSql = schema.sql(CLAIMED_SEEN);
        this.shardLockSql = schema.sql(SHARD_LOCK);
        this.split = split;
    }

    private static String bound(String sql, String from, String to) {
        if (!sql.contains(from)) {
            throw new IllegalStateException("ShardedClaims no longer finds '" + from + "' to bind the root in");
        }
        return sql.replace(from, to);
    }

    /** The statements as sent: the candidates' read, the lock by saga, the lock by id (for EXPLAIN in tests). */
    List<String> sql() {
        return List.of(candidatesSql, lockBySagaSql, lockByIdSql, seenSql, lockUnchangedSql);
    }

    /** Locks the first due candidate of {@code version} of {@code saga} that no other engine holds, and completes it. */
    ClaimedRun claim(Connection c, String saga, int version, String engine, OffsetDateTime now) throws SQLException {
        ClaimedRun locked = lockCandidate(c, saga, version, engine, now);
        return locked == null ? null : complete(c, locked, engine);
    }

    /** Completes a run {@link #lockCandidate} or {@link #lockById} locked: its SEEN, its message and its log. */
    ClaimedRun complete(Connection c, ClaimedRun locked, String engine) throws SQLException {
        return split.complete(c, locked, engine, seenSql, true);
    }

    /** Locks {@code runId} by its root if it is still runnable and due, without completing it; or null. */
    ClaimedRun lockById(Connection c, UUID rootId, UUID runId, String engine, OffsetDateTime now)
            throws SQLException {
        return lock(c, lockByIdSql, rootId, runId, engine, now, now);
    }

    /** Locks the first due candidate of {@code version} of {@code saga} that no other engine holds; or null. */
    ClaimedRun lockCandidate(Connection c, String saga, int version, String engine, OffsetDateTime now)
            throws SQLException {
        String refusal = null; // what an earlier version's gate said in this transaction, for the empty claim
        for (int page = 0; page < MAX_PAGES; page++) {
            refusal = endAttemptsIfAny(c, refusal);
            List<Candidate> candidates = candidatesApart(c, saga, version, now, page * CANDIDATES_PER_CLAIM);
            int read = candidates.size();
            // from a random one of the page on: workers claiming at once mostly try different runs first
            if (read > 1) {
                java.util.Collections.rotate(candidates,
                        -java.util.concurrent.ThreadLocalRandom.current().nextInt(read));
            }
            String failedOn = null; // the worker of the attempts that failed in the open transaction
            while (!candidates.isEmpty()) {
                Candidate candidate = next(candidates, failedOn);
                if (failedOn != null && !failedOn.equals(candidate.node())) {
                    // the attempts that failed were on another worker: not in the step's transaction
                    refusal = endAttemptsIfAny(c, refusal);
                }
                ClaimedRun locked = lock(c, lockBySagaSql, candidate.root(), candidate.id(), engine, now, saga,
                        version, now);
                if (locked != null) {
                    return locked;
                }
                failedOn = candidate.node() == null ? "" : candidate.node(); // unknown: ended before the next
            }
            if (read < CANDIDATES_PER_CLAIM) {
                break; // no more due runs
            }
        }
        if (refusal != null) { // the caller commits the empty claim, reading why a limited saga's gate refused
            try (PreparedStatement ps = c.prepareStatement(KEEP_REFUSAL)) {
                ps.setString(1, refusal);
                ps.execute();
            }
        }
        return null;
    }

    /** A due run the candidates' read found, and its worker ({@code host:port}; null when not known). */
    record Candidate(UUID root, UUID id, String node) {
    }

    /**
     * Takes the next candidate to try: the first on {@code failedOn}, the worker of the attempts that failed in the
     * open transaction, when there is one (the transaction then goes on there, without a {@code ROLLBACK} of its own),
     * else the first.
     */
    private static Candidate next(List<Candidate> candidates, String failedOn) {
        int at = 0;
        if (failedOn != null) {
            for (int i = 0; i < candidates.size(); i++) {
                if (failedOn.equals(candidates.get(i).node())) {
                    at = i;
                    break;
                }
            }
        }
        return candidates.remove(at);
    }

    /**
     * Ends the claim's transaction when lock attempts that locked nothing left it open ({@link #endAttempts}), so
     * that it holds no connection to their workers; returns the refusal it read, else {@code refusal}.
     */
    private static String endAttemptsIfAny(Connection c, String refusal) throws SQLException {
        if (c.getAutoCommit() || !inTransaction(c)) {
            return refusal;
        }
        String read = endAttempts(c);
        return read != null ? read : refusal;
    }

    /** Locks {@code runId} again if it is still runnable and due (a reclaim by id), and completes it; or null. */
    ClaimedRun reclaim(Connection c, UUID rootId, UUID runId, String engine, OffsetDateTime now) throws SQLException {
        ClaimedRun locked = lock(c, lockByIdSql, rootId, runId, engine, now, now);
        return locked == null ? null : split.complete(c, locked, engine, seenSql, true);
    }

    /** Locks {@code run} again after its failed step was rolled back, unless it moved on meanwhile; or null. */
    ClaimedRun reclaimUnchanged(Connection c, ClaimedRun run, String engine, OffsetDateTime now) throws SQLException {
        ClaimedRun locked = lock(c, lockUnchangedSql, run.rootId(), run.id(), engine, now, run.version());
        return locked == null ? null : split.complete(c, locked, engine, seenSql, true);
    }

    /**
     * {@link #candidates} in a transaction of their own (auto-commit), not in the claim's: a transaction that read
     * every shard keeps a connection to every worker, which Citus marks essential, so a step of a hierarchy on a live
     * worker failed at its next {@code SAVEPOINT} or {@code COMMIT} once another worker stopped (docs/guide/citus.md,
     * "Faults"). The claim's transaction then begins with the lock, routed to the candidate's worker, and holds
     * connections to that worker alone. Costs no round trip when no transaction is open (the driver's auto-commit
     * switch sends nothing then, and the lock's {@code BEGIN} goes with the lock). The caller ends lock attempts
     * that locked nothing first ({@link #endAttemptsIfAny}: a round trip each).
     */
    private List<Candidate> candidatesApart(Connection c, String saga, int version, OffsetDateTime now, int offset)
            throws SQLException {
        if (c.getAutoCommit()) {
            return candidates(c, saga, version, now, offset);
        }
        c.setAutoCommit(true); // no transaction is open (endAttemptsIfAny): the driver sends nothing
        List<Candidate> read;
        try {
            read = candidates(c, saga, version, now, offset);
        } catch (SQLException | RuntimeException e) {
            try {
                c.setAutoCommit(false);
            } catch (SQLException again) { // the connection is likely gone: the read's failure says why
                e.addSuppressed(again);
            }
            throw e;
        }
        c.setAutoCommit(false);
        return read;
    }

    /**
     * Rolls back the claim's transaction, which holds only lock attempts that locked nothing or runs a limited
     * saga's gate refused (no SEEN, no slot, no token, nothing written); returns the gate's refusal, or null.
     */
    private static String endAttempts(Connection c) throws SQLException {
        return SagaLimits.endWithRefusal(c, "ROLLBACK");
    }

    /**
     * Whether {@code c} has a transaction open (a statement sent since its last commit or rollback), as PostgreSQL's
     * driver tracks it; true when the connection does not unwrap to the driver's (then {@link #endAttempts} ends what
     * may be open).
     */
    private static boolean inTransaction(Connection c) {
        try {
            return c.unwrap(org.postgresql.core.BaseConnection.class)
                    .getTransactionState() != org.postgresql.core.TransactionState.IDLE;
        } catch (SQLException notTheDrivers) {
            return true;
        }
    }

    /**
     * The due candidates: of every shard at once, or of each worker apart ({@link NodeReads}) while one of them is
     * unreachable. In auto-commit.
     */
    private List<Candidate> candidates(Connection c, String saga, int version, OffsetDateTime now, int offset)
            throws SQLException {
        if (!nodeReads.perNode()) {
            try {
                List<Candidate> read = everyShard(c, saga, version, now, offset);
                nodeReads.fullReadAnswered();
                return read;
            } catch (SQLException e) {
                if (!NodeReads.unreachableWorker(e)) {
                    throw e;
                }
                nodeReads.fullReadFailed(e);
            }
        }
        return nodeReads.candidates(c, saga, version, now, CANDIDATES_PER_CLAIM, offset);
    }

    private List<Candidate> everyShard(Connection c, String saga, int version, OffsetDateTime now, int offset)
            throws SQLException {
        List<String[]> read = new ArrayList<>(CANDIDATES_PER_CLAIM);
        try (PreparedStatement ps = c.prepareStatement(candidatesSql)) {
            ps.setString(1, saga);
            ps.setInt(2, version);
            ps.setObject(3, now);
            ps.setInt(4, CANDIDATES_PER_CLAIM);
            ps.setInt(5, offset);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    read.add(new String[]{rs.getString(1), rs.getString(2), rs.getString(3)});
                }
            }
        }
        List<Candidate> out = new ArrayList<>(read.size());
        for (String[] r : read) { // after the read: the map may be read in its place
            out.add(new Candidate(UUID.fromString(r[0]), UUID.fromString(r[1]), shardNodes.of(c, r[2])));
        }
        return out;
    }

    /** Locks one run by {@code root} and {@code id}; {@code selection}: the rest of the selection's parameters. */
    private ClaimedRun lock(Connection c, String sql, UUID root, UUID id, String engine, OffsetDateTime now,
            Object... selection) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(shardLockSql + COORDINATOR_XACT + sql)) {
            int i = 0;
            ps.setObject(++i, root); // the shard's
            ps.setObject(++i, now);
            ps.setString(++i, engine);
            ps.setObject(++i, root); // the cancellation's
            ps.setObject(++i, root);
            ps.setObject(++i, id);
            for (Object value : selection) {
                ps.setObject(++i, value);
            }
            ps.execute(); // the shard lock's row first
            if (!ps.getMoreResults()) {
                throw new IllegalStateException("the sharded claim's lock returned no transaction id");
            }
            String xact;
            try (ResultSet rs = ps.getResultSet()) {
                rs.next();
                xact = rs.getString(1);
            }
            if (!ps.getMoreResults()) {
                throw new IllegalStateException("the sharded claim's lock returned no rows");
            }
            try (ResultSet rs = ps.getResultSet()) {
                return rs.next() ? SplitClaim.locked(rs, xact) : null;
            }
        }
    }
}
