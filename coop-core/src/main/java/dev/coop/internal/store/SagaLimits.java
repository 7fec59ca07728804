package dev.coop.internal.store;

import dev.coop.Saga;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

/**
 * Every statement about saga limits (concurrency slots and rate tokens, schema version 11): writing a saga's limits
 * into its registration, reading which sagas are limited, and what a limited saga waits for. The claim itself takes
 * a slot and a token in the same statement (see {@link dev.coop.internal.store.Store}), binding the limits read here.
 */
public final class SagaLimits {
    private final SchemaName schema;

    public SagaLimits(SchemaName schema) {
        this.schema = schema;
    }

    /**
     * Writes the limits of {@code saga} into its registration (the last engine to register a saga decides its
     * limits for all) and gives its rate window one row per allowed start. Called after the saga was registered.
     */
    public void register(Connection c, Saga<?> saga) throws SQLException {
        Integer concurrency = saga.concurrency() > 0 ? saga.concurrency() : null;
        Integer rate = saga.rateLimit() > 0 ? saga.rateLimit() : null;
        Long periodMillis = rate == null ? null : saga.ratePeriod().toMillis();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                UPDATE {schema}.saga_registration SET concurrency = ?, rate_limit = ?, rate_period_ms = ?
                 WHERE saga = ?
                """))) {
            ps.setObject(1, concurrency, java.sql.Types.INTEGER);
            ps.setObject(2, rate, java.sql.Types.INTEGER);
            ps.setObject(3, periodMillis, java.sql.Types.BIGINT);
            ps.setString(4, saga.name());
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH removed AS (DELETE FROM {schema}.rate_token WHERE saga = ? AND slot >= ?)
                INSERT INTO {schema}.rate_token (saga, slot)
                SELECT ?, s FROM generate_series(0, ? - 1) s
                 WHERE (SELECT count(*) FROM {schema}.rate_token t WHERE t.saga = ? AND t.slot < ?) < ?
                ON CONFLICT (saga, slot) DO NOTHING
                """))) { // a window already complete is left alone: no write at every engine start
            int rows = rate == null ? 0 : rate;
            ps.setString(1, saga.name());
            ps.setInt(2, rows);
            ps.setString(3, saga.name());
            ps.setInt(4, rows);
            ps.setString(5, saga.name());
            ps.setInt(6, rows);
            ps.setInt(7, rows);
            ps.executeUpdate();
        }
    }

    /**
     * A saga's limits as its registration holds them, which the limited claim binds (validated numbers, never SQL
     * text): {@code concurrency} slots (null: no concurrency limit), {@code rateLimit} starts per
     * {@code ratePeriodMillis} (both null: no rate limit).
     */
    public record Limit(Integer concurrency, Integer rateLimit, Long ratePeriodMillis) {
        public Limit {
            if (concurrency != null && concurrency < 1) {
                throw new IllegalArgumentException("concurrency must be positive, was " + concurrency);
            }
            if ((rateLimit == null) != (ratePeriodMillis == null)) {
                throw new IllegalArgumentException("a rate limit needs both a number of starts and a period, was "
                        + rateLimit + " per " + ratePeriodMillis + " ms");
            }
            if (rateLimit != null && (rateLimit < 1 || ratePeriodMillis < 1)) {
                throw new IllegalArgumentException("a rate limit must be positive, was " + rateLimit + " per "
                        + ratePeriodMillis + " ms");
            }
        }

        /** Whether a claim takes a slot (one of {@link #concurrency()}). */
        public boolean slots() {
            return concurrency != null;
        }

        /** Whether a claim takes a rate token. */
        public boolean rate() {
            return rateLimit != null;
        }
    }

    /**
     * Which of {@code sagas} have a limit in the registry (whatever the caller's own definitions say), with those
     * limits.
     */
    public Map<String, Limit> limited(Connection c, Collection<String> sagas) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT saga, concurrency, rate_limit, rate_period_ms FROM {schema}.saga_registration
                 WHERE saga = ANY(?) AND (concurrency IS NOT NULL OR rate_limit IS NOT NULL)
                """))) {
            ps.setArray(1, c.createArrayOf("text", sagas.toArray()));
            Map<String, Limit> limited = new HashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Integer rate = rs.getObject("rate_limit", Integer.class);
                    Long period = rs.getObject("rate_period_ms", Long.class);
                    boolean rated = rate != null && period != null;
                    limited.put(rs.getString("saga"), new Limit(rs.getObject("concurrency", Integer.class),
                            rated ? rate : null, rated ? period : null));
                }
            }
            return limited;
        }
    }

    /** One half of the reservation's candidates: free tokens from the offset on ({@code >=}), or before it. */
    private static final String RESERVE_BRANCH = """
            SELECT * FROM (SELECT x.slot FROM {schema}.rate_token x WHERE x.saga = ? AND x.slot %s ?
                AND x.taken_at <= (SELECT t.r FROM t) - ?::bigint * interval '1 millisecond'
                ORDER BY x.slot LIMIT ? FOR UPDATE SKIP LOCKED) %s""";

    /** Moves up to a lease's tokens to the lease's end, and commits at once without waiting for the flush. */
    private static final String RESERVE = "WITH t AS MATERIALIZED (SELECT coalesce(?::timestamptz, clock_timestamp())"
            + " AS r, set_config('synchronous_commit', 'off', true) AS async),\n"
            + "cand AS MATERIALIZED (" + RESERVE_BRANCH.formatted(">=", "a") + "\n  UNION ALL "
            + RESERVE_BRANCH.formatted("<", "b") + "\n  LIMIT ?),\n"
            + """
                    moved AS (UPDATE {schema}.rate_token k SET taken_at = (SELECT t.r FROM t) + ?::bigint
                        * interval '1 millisecond' FROM cand c WHERE k.saga = ? AND k.slot = c.slot RETURNING 1)
                    SELECT (SELECT count(*) FROM moved)::int, (SELECT t.r FROM t) + ?::bigint * interval '1 millisecond';
                    COMMIT""";

    /**
     * Moves up to {@link RateLease#size} free rate tokens of {@code saga} (at least a period old; from a random one on
     * in primary-key order, wrapping around) to the reservation's time plus the lease's length, for the engine to
     * start that many steps before then without writing a token each ({@link RateLease}), and commits, in one round
     * trip; {@code c} must have nothing else in its transaction. The commit does not wait for its flush: a step that
     * starts on the lease commits after it, and its own flush makes the reservation durable first. When no token was
     * free, the lease is empty (and lasts as long, before the next try).
     *
     * @param now the time as bound (a TimeSource), or null for the database's clock
     */
    public RateLease reserve(Connection c, String saga, Limit limit, OffsetDateTime now) throws SQLException {
        int size = RateLease.size(limit.rateLimit());
        long length = RateLease.lengthMillis(limit.ratePeriodMillis());
        long sent = System.nanoTime();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(RESERVE))) {
            int offset = java.util.concurrent.ThreadLocalRandom.current().nextInt(limit.rateLimit());
            int i = 0;
            ps.setObject(++i, now);
            for (int b = 0; b < 2; b++) {
                ps.setString(++i, saga);
                ps.setInt(++i, offset);
                ps.setLong(++i, limit.ratePeriodMillis());
                ps.setInt(++i, size);
            }
            ps.setInt(++i, size);
            ps.setLong(++i, length);
            ps.setString(++i, saga);
            ps.setLong(++i, length);
            return lease(ps, sent, length);
        }
    }

    /** Executes the reservation (its statement and its COMMIT) and reads the lease it granted. */
    private static RateLease lease(PreparedStatement ps, long sent, long length) throws SQLException {
        RateLease lease = null;
        boolean isResultSet = ps.execute();
        while (isResultSet || ps.getUpdateCount() != -1) {
            if (isResultSet) {
                try (ResultSet rs = ps.getResultSet()) {
                    rs.next();
                    lease = new RateLease(rs.getInt(1), rs.getObject(2, OffsetDateTime.class), sent, length);
                }
            }
            isResultSet = ps.getMoreResults();
        }
        return lease;
    }

    /**
     * What a limited saga waits for right now: its slots (from {@code pg_locks}: the step transactions holding one)
     * and the time its next rate token frees (null when one is free or there is no rate limit).
     */
    public record State(String saga, Integer concurrency, int busySlots, Integer rateLimit, Long ratePeriodMillis,
            OffsetDateTime rateLimitedUntil) {

        /** Why a runnable, due run of this saga is not running, or null when nothing of its limits holds it back. */
        public String reason() {
            if (concurrency != null && busySlots >= concurrency) {
                return "waiting for a slot (" + busySlots + " of " + concurrency + " busy)";
            }
            if (rateLimitedUntil != null) {
                return "rate limited until " + rateLimitedUntil.toInstant();
            }
            return null;
        }
    }

    /** The state of each limited saga among {@code sagas} (sagas without limits are left out). */
    public Map<String, State> states(Connection c, Collection<String> sagas, OffsetDateTime now) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT r.saga, r.concurrency, r.rate_limit, r.rate_period_ms,
                       (SELECT count(*)::int FROM pg_locks l
                         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                           AND l.classid = (({schema}.slot_key(r.saga) >> 32) & 4294967295)::oid
                           AND l.objid::bigint < coalesce(r.concurrency, 0)) AS busy,
                       (SELECT min(t.taken_at) + r.rate_period_ms * interval '1 millisecond'
                          FROM {schema}.rate_token t WHERE t.saga = r.saga) AS free_at,
                       {now} AS now
                  FROM {schema}.saga_registration r
                 WHERE r.saga = ANY(?) AND (r.concurrency IS NOT NULL OR r.rate_limit IS NOT NULL)
                """))) {
            ps.setObject(1, now);
            ps.setArray(2, c.createArrayOf("text", sagas.toArray()));
            Map<String, State> states = new HashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    OffsetDateTime freeAt = rs.getObject("free_at", OffsetDateTime.class);
                    OffsetDateTime at = rs.getObject("now", OffsetDateTime.class);
                    String saga = rs.getString("saga");
                    states.put(saga, new State(saga, rs.getObject("concurrency", Integer.class), rs.getInt("busy"),
                            rs.getObject("rate_limit", Integer.class), rs.getObject("rate_period_ms", Long.class),
                            freeAt != null && freeAt.isAfter(at) ? freeAt : null));
                }
            }
            return states;
        }
    }

    /**
     * Commits the transaction of a claim that found nothing, reading in the same round trip why: null when the
     * saga's limits did not refuse it (no run was due), {@code "slot"} when every slot was busy, or the milliseconds
     * until its next rate token frees.
     */
    public String commitEmptyClaim(Connection c) throws SQLException {
        return endWithRefusal(c, "COMMIT");
    }

    /**
     * Ends the claim's transaction with {@code end} ({@code COMMIT} or {@code ROLLBACK}) in the round trip that reads
     * what a limited saga's refused gate said ({@code coop.limit_wait}); returns it, or null.
     */
    static String endWithRefusal(Connection c, String end) throws SQLException {
        String refusal = null;
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT nullif(current_setting('coop.limit_wait', true), '');\n" + end)) {
            boolean isResultSet = ps.execute();
            while (isResultSet || ps.getUpdateCount() != -1) {
                if (isResultSet) {
                    try (ResultSet rs = ps.getResultSet()) {
                        if (rs.next()) {
                            refusal = rs.getString(1);
                        }
                    }
                }
                isResultSet = ps.getMoreResults();
            }
        }
        return refusal;
    }
}
