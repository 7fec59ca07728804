package dev.coop.internal.store;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The claim of a saga with limits (schema versions 11 and 14), in plain SQL: CTEs before the usual claim that lock
 * the run the plain claim would take ({@code pick}), then, only if there is one, take a concurrency slot
 * ({@code slot}) and a rate token ({@code cand}, {@code token}), in that order; {@code gate} is the step's start time
 * when both were granted, and otherwise sets {@code coop.limit_wait} to why not. The claim proper reads the picked
 * run by primary key and uses the gate's time as its {@code {now}} (so the log's start times are the rate window's).
 * No run, or a refusal, selects nothing; a claim that finds no run takes no slot and no token.
 *
 * <p>The saga's limits are bind parameters, as the engine read them from the registry ({@link SagaLimits.Limit}).
 * Slots and tokens are tried from a random offset, wrapping around, so that a limit that does not bind is granted at
 * the first try, and one that binds tries each slot or token at most once. A claim on a token of the engine's
 * {@link RateLease} writes no token: its start must be at or before the lease's end ({@code 'lease'} otherwise).
 */
public final class LimitedClaim {
    /** What the gate binds after the selection's parameters, in the statement's order. */
    private enum Param {
        NOW, SAGA, SLOTS, SLOT_OFFSET, TOKEN_OFFSET, PERIOD, UNTIL
    }

    private final String sql;
    private final List<Param> params;

    private LimitedClaim(String sql, List<Param> params) {
        this.sql = sql;
        this.params = List.copyOf(params);
    }

    /** The statement, {@code {schema}} substituted, {@code {now}} left to the selection's own. */
    public String sql() {
        return sql;
    }

    /**
     * The limited claim of the runs {@code selection} selects (a WHERE clause over {@code run r}, with its own
     * parameters first), taking a slot when {@code slots}, a rate token when {@code rate}, or, when {@code leased},
     * starting on a token of a {@link RateLease} instead: the start must then be at or before the lease's end.
     */
    /**
     * @param claimTemplate {@link dev.coop.internal.store.ClaimSql#CLAIM}, its idle-in-transaction timeout set
     *         ({@link dev.coop.internal.store.ClaimSql#idleInTransaction})
     */
    public static LimitedClaim of(SchemaName schema, String claimTemplate, String selection, boolean slots,
            boolean rate,
            boolean leased) {
        if (!slots && !rate && !leased || rate && leased) {
            throw new IllegalArgumentException("a limited claim takes a slot, a rate token or a leased one, or both");
        }
        List<Param> params = new ArrayList<>();
        StringBuilder sql = new StringBuilder("WITH pick AS MATERIALIZED (SELECT r.id FROM {schema}.run r WHERE ")
                .append(selection).append(" LIMIT 1 FOR UPDATE SKIP LOCKED),\n");
        slot(sql, params, slots);
        String gated;
        if (rate) {
            gated = token(sql, params);
        } else if (leased) { // the lease's token: already moved past this start
            gated = "SELECT s.at FROM slot s WHERE s.at <= ?::timestamptz";
            params.add(Param.UNTIL);
        } else {
            gated = "SELECT s.at FROM slot s";
        }
        gate(sql, params, gated, rate, leased);
        String claim = claimTemplate
                .formatted("r.id = (SELECT p.id FROM pick p) AND (SELECT g.at FROM gate g) IS NOT NULL");
        if (!claim.startsWith("WITH claimed AS (")) {
            throw new IllegalStateException("the claim statement no longer starts with its 'claimed' CTE");
        }
        sql.append(claim.substring("WITH ".length()).replace("{now}", "(SELECT g.at FROM gate g)")
                .replace(dev.coop.internal.store.ClaimSql.CLAIMED_AT, "(SELECT g.at FROM gate g)"));
        return new LimitedClaim(schema.sql(sql.toString()), params);
    }

    /**
     * The gate alone, for Citus ({@link ShardedLimitedClaim}): the slot, the token and the refusal's reason of
     * {@link #of} without the run's lock and claim, a statement on the coordinator's own tables only ({@code rate_token}
     * and advisory locks), which Citus runs there. Sent after the run was locked on its shard, so {@code pick} is a
     * constant row. Selects the step's start, or null when refused ({@code coop.limit_wait} then says why).
     */
    public static LimitedClaim gate(SchemaName schema, boolean slots, boolean rate, boolean leased) {
        if (!slots && !rate && !leased || rate && leased) {
            throw new IllegalArgumentException("a limited claim takes a slot, a rate token or a leased one, or both");
        }
        List<Param> params = new ArrayList<>();
        StringBuilder sql = new StringBuilder("WITH pick AS MATERIALIZED (SELECT true AS id),\n");
        slot(sql, params, slots);
        String gated;
        if (rate) {
            gated = token(sql, params);
        } else if (leased) {
            gated = "SELECT s.at FROM slot s WHERE s.at <= ?::timestamptz";
            params.add(Param.UNTIL);
        } else {
            gated = "SELECT s.at FROM slot s";
        }
        gate(sql, params, gated, rate, leased);
        sql.setLength(sql.length() - ",\n".length());
        sql.append("\nSELECT (SELECT g.at FROM gate g) AS at");
        return new LimitedClaim(schema.sql(sql.toString()), params);
    }

    /** CTE {@code slot}: the step's start, and with {@code slots} the first free slot from a random one on. */
    private static void slot(StringBuilder sql, List<Param> params, boolean slots) {
        // the step's start: the time as bound (a TimeSource), else the clock, read once the slot is held
        sql.append("slot AS MATERIALIZED (SELECT coalesce(?::timestamptz, clock_timestamp()) AS at FROM pick p");
        params.add(Param.NOW);
        if (slots) { // the first free slot from a random one on: one try when the limit does not bind
            sql.append("\n  CROSS JOIN LATERAL (SELECT 1 FROM generate_series(0, ?::int - 1) g(s) WHERE p.id IS NOT"
                    + " NULL\n    AND pg_try_advisory_xact_lock({schema}.slot_key(?) + (g.s + ?::int) % ?::int)"
                    + " LIMIT 1) x");
            params.addAll(List.of(Param.SLOTS, Param.SAGA, Param.SLOT_OFFSET, Param.SLOTS));
        }
        sql.append("),\n");
    }

    /** CTEs {@code cand} and {@code token}: a rate token free for a period, moved to the start; returns the gate. */
    private static String token(StringBuilder sql, List<Param> params) {
        // a token free for a period, the first from a random one on in primary-key order (no index on the
        // time: moving a token is a HOT update); none when no slot was granted (the scans are then skipped)
        String branch = "SELECT * FROM (SELECT x.slot FROM {schema}.rate_token x WHERE x.saga = ? AND x.slot %s ?"
                + "\n    AND (SELECT s.at FROM slot s) IS NOT NULL"
                + " AND x.taken_at <= (SELECT s.at FROM slot s) - ?::bigint * interval '1 millisecond'"
                + "\n    ORDER BY x.slot LIMIT 1 FOR UPDATE SKIP LOCKED) %s";
        sql.append("cand AS MATERIALIZED (").append(branch.formatted(">=", "a")).append("\n  UNION ALL ")
                .append(branch.formatted("<", "b")).append("\n  LIMIT 1),\n");
        params.addAll(List.of(Param.SAGA, Param.TOKEN_OFFSET, Param.PERIOD,
                Param.SAGA, Param.TOKEN_OFFSET, Param.PERIOD));
        sql.append("token AS (UPDATE {schema}.rate_token k SET taken_at = (SELECT s.at FROM slot s) FROM cand c"
                + " WHERE k.saga = ? AND k.slot = c.slot RETURNING k.taken_at AS at),\n");
        params.add(Param.SAGA);
        return "SELECT t.at FROM token t";
    }

    /** CTE {@code gate}: the start when granted; refused (there was a run), why, in {@code coop.limit_wait}. */
    private static void gate(StringBuilder sql, List<Param> params, String gated, boolean rate, boolean leased) {
        // refused (there was a run): why, for the engine to read before it commits; 'slot', or the milliseconds
        // until the oldest token is a period old
        sql.append("gate AS MATERIALIZED (").append(gated).append("\n  UNION ALL SELECT NULL FROM pick WHERE ");
        if (rate) {
            sql.append("set_config('coop.limit_wait', CASE WHEN NOT EXISTS (SELECT 1 FROM slot) THEN 'slot' ELSE"
                    + "\n    coalesce((SELECT ceil(extract(epoch FROM (greatest(min(x.taken_at), s.at - ?::bigint"
                    + " * interval '1 millisecond')\n      + ?::bigint * interval '1 millisecond' - s.at)) * 1000)"
                    + "::bigint::text\n      FROM {schema}.rate_token x, slot s WHERE x.saga = ? GROUP BY s.at),"
                    + " '0') END, true) IS NULL");
            params.addAll(List.of(Param.PERIOD, Param.PERIOD, Param.SAGA));
        } else if (leased) {
            sql.append("set_config('coop.limit_wait', CASE WHEN NOT EXISTS (SELECT 1 FROM slot) THEN 'slot' ELSE"
                    + " 'lease' END, true) IS NULL");
        } else {
            sql.append("set_config('coop.limit_wait', 'slot', true) IS NULL");
        }
        sql.append("\n  LIMIT 1),\n");
    }

    /**
     * Binds the gate's parameters from index {@code i + 1} on: {@code saga}'s limits, the time ({@code now}, null
     * for the database's clock), random offsets, and the end of the lease whose token the claim took (null if none).
     * Returns the last index bound.
     */
    public int bind(PreparedStatement ps, int i, String saga, SagaLimits.Limit limit, OffsetDateTime now,
            RateLease lease) throws SQLException {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        int slotOffset = limit.slots() ? random.nextInt(limit.concurrency()) : 0;
        int tokenOffset = limit.rate() ? random.nextInt(limit.rateLimit()) : 0;
        for (Param p : params) {
            switch (p) {
                case NOW -> ps.setObject(++i, now);
                case SAGA -> ps.setString(++i, saga);
                case SLOTS -> ps.setInt(++i, limit.concurrency());
                case SLOT_OFFSET -> ps.setInt(++i, slotOffset);
                case TOKEN_OFFSET -> ps.setInt(++i, tokenOffset);
                case PERIOD -> ps.setLong(++i, limit.ratePeriodMillis());
                case UNTIL -> ps.setObject(++i, lease.until());
            }
        }
        return i;
    }
}
