package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Map;

/**
 * Which sagas are claimed through their limits (slots, rate tokens), and the rate tokens this store leased: what picks
 * the limited form of a claim, a reclaim and a continuing advance ({@link #gateOf}).
 */
final class ClaimGates {
    private final Time time;

    /** The sagas whose claims go through their limits, with them (read from the registry; see {@link #limited}). */
    private volatile Map<String, SagaLimits.Limit> limited = Map.of();
    /** The rate tokens this store leased, per saga (see {@link #refillLease}). */
    private final Map<String, RateLease> leases = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.Set<String> leasing = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final SagaLimits limits;

    ClaimGates(SchemaName schema, Time time) {
        this.time = time;
        this.limits = new SagaLimits(schema);
    }

    /** The limits of {@code saga}, or null when its claims do not go through limits. */
    SagaLimits.Limit limit(String saga) {
        return limited.get(saga);
    }

    /**
     * Which sagas this store claims through their limits, with those limits: the engine's sagas that have limits in
     * the registry, read at start and at every probe.
     */
    public void limited(Map<String, SagaLimits.Limit> sagas) {
        this.limited = Map.copyOf(sagas);
    }

    /** Whether claims of {@code saga} go through its limits. */
    public boolean isLimited(String saga) {
        return limited.containsKey(saga);
    }

    /**
     * Which limited statements a saga with {@code limit} is claimed with: 1 slots, 2 rate tokens, 3 both; with a
     * token of {@code lease} (if not null) instead of a rate token, 4, or 5 with slots.
     */
    static int gateOf(SagaLimits.Limit limit, RateLease lease) {
        return (limit.slots() ? 1 : 0) | (lease != null ? 4 : limit.rate() ? 2 : 0);
    }

    /** A token of the saga's lease for one claim, or null (none left, or none leased). */
    RateLease takeLease(String saga, SagaLimits.Limit limit) {
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
}
