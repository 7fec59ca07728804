package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.UUID;

/**
 * The claim of a limited saga on Citus (docs/guide/citus.md, "Limits and ordering keys"), in the form of
 * {@link ShardedClaims}: the candidates read across shards without a lock, one locked by its root on its shard, then
 * the limit's gate on the coordinator ({@link LimitedClaim#gate}: the concurrency slot, an advisory lock of the
 * coordinator's transaction, and the rate token in the coordinator's {@code rate_token}), then the claim completed.
 * All in the claim's transaction, as plain PostgreSQL's {@link LimitedClaim} takes them in its one statement: the
 * slot is let go when that transaction ends (the step's commit, its rollback, a lost connection), so a run that
 * finishes, fails, rolls back or is cancelled frees it exactly as on plain PostgreSQL.
 *
 * <p>The gate's time (the engine's bound time, else the coordinator's clock once the slot is held) is the claim's
 * {@code claimed_at}, so the token's time is the step's start in the log and no start precedes its slot. A
 * refused gate leaves the run locked but unclaimed (no SEEN, no token); the caller commits the empty claim, reading
 * {@code coop.limit_wait} on the coordinator ({@link SagaLimits#commitEmptyClaim}). A claim that locks no run takes
 * no slot and no token.
 */
final class ShardedLimitedClaim {
    private final LimitedClaim[] gates = new LimitedClaim[6];
    private final ShardedClaims claims;

    ShardedLimitedClaim(SchemaName schema, ShardedClaims claims) {
        this.claims = claims;
        for (int gate = 1; gate < 6; gate++) {
            gates[gate] = LimitedClaim.gate(schema, (gate & 1) != 0, (gate & 2) != 0, (gate & 4) != 0);
        }
    }

    /** The gate statements as sent, by {@link ClaimGates#gateOf} (for EXPLAIN in tests). */
    String gateSql(int gate) {
        return gates[gate].sql();
    }

    /** Claims a due run of {@code saga} through its limits (a token of {@code lease} if not null); or null. */
    ClaimedRun claim(Connection c, String saga, int version, String engine, SagaLimits.Limit limit, RateLease lease,
            OffsetDateTime now) throws SQLException {
        ClaimedRun locked = claims.lockCandidate(c, saga, version, engine, now);
        return locked == null ? null : gated(c, locked, saga, engine, limit, lease, now);
    }

    /** Reclaims {@code runId} by its root through its saga's limits if it is still runnable and due; or null. */
    ClaimedRun reclaim(Connection c, UUID rootId, UUID runId, String saga, String engine, SagaLimits.Limit limit,
            RateLease lease, OffsetDateTime now) throws SQLException {
        ClaimedRun locked = claims.lockById(c, rootId, runId, engine, now);
        return locked == null ? null : gated(c, locked, saga, engine, limit, lease, now);
    }

    private ClaimedRun gated(Connection c, ClaimedRun locked, String saga, String engine, SagaLimits.Limit limit,
            RateLease lease, OffsetDateTime now) throws SQLException {
        LimitedClaim gate = gates[ClaimGates.gateOf(limit, lease)];
        OffsetDateTime at;
        try (PreparedStatement ps = c.prepareStatement(gate.sql())) {
            gate.bind(ps, 0, saga, limit, now, lease);
            try (ResultSet rs = ps.executeQuery()) {
                at = rs.next() ? rs.getObject(1, OffsetDateTime.class) : null;
            }
        }
        if (at == null) {
            return null; // refused: why is in coop.limit_wait
        }
        return claims.complete(c, startedAt(locked, at), engine);
    }

    /**
     * {@code run} claimed at {@code at}, the gate's time: read on the coordinator once the slot is held, so that a
     * step's start in the log never precedes its slot (as plain PostgreSQL's gate sets the claim's time).
     */
    private static ClaimedRun startedAt(ClaimedRun r, OffsetDateTime at) {
        return new ClaimedRun(r.id(), r.saga(), r.sagaVersion(), r.messageId(), r.lineage(), r.parentId(), r.rollback(),
                r.stepIndex(), r.nextStep(), r.stepsDone(), r.history(), r.attempt(), r.started(), r.failedChildren(),
                r.rollbackSeq(), r.rollbackStage(), r.rollbackCause(), r.resolution(), r.retries(), r.version(),
                r.context(), r.parentContext(), r.finallyDone(), r.pendingChildren(), r.awaited(), r.waitingSince(),
                r.cancellation(), r.topic(), r.payload(), r.messageCreatedAt(), at, r.xact(), r.runnableAt(),
                r.cancelFrom(), r.orderingKey());
    }
}
