package dev.coop.internal.retention;

import dev.coop.internal.read.RunCountRollup;

import dev.coop.internal.operate.Operations;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;
import dev.coop.internal.store.Tx;

import dev.coop.MessageId;
import dev.coop.PruneResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Deletes finished hierarchies, root by root: every event, run, cancellation and message of a hierarchy goes in one
 * statement, or nothing does (four statements per batch of roots). A hierarchy is a candidate when every run of its root message finished before the
 * cutoff and no run of it is runnable (also sleeping or due to retry), waiting or parked. Each root is taken under the
 * operator lock of its hierarchy (the one rollbacks and cancels take, tried, never waited for), so an operator action
 * and pruning never interleave; candidate root runs are locked with {@code SKIP LOCKED}, so engines pruning at once
 * share the work. Each batch also deletes the counts over time ({@link RunCountRollup}) of the minutes before the
 * cutoff.
 */
public final class Retention {
    /** Hierarchies deleted per transaction at most. */
    public static final int BATCH = 100;
    private static final int SAMPLE = 20;

    /**
     * Root runs of the hierarchies that finished before the cutoff (bound twice) with nothing runnable, waiting or
     * parked left: the candidates (found through {@code run_finished}, schema version 27, and {@code run_active_root}).
     */
    private static final String FINISHED_ROOT_RUNS = """
              FROM {schema}.run r
             WHERE r.parent_id IS NULL AND r.status IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED')
               AND r.finished_at < ?
               AND NOT EXISTS (SELECT 1 FROM {schema}.run a
                                WHERE a.root_id = r.root_id AND a.status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD'))
               AND NOT EXISTS (SELECT 1 FROM {schema}.run o
                                WHERE o.message_id = r.message_id AND (o.finished_at IS NULL OR o.finished_at >= ?))
            """;
    private static final String CANDIDATES = "SELECT DISTINCT c.root FROM (SELECT r.root_id AS root "
            + FINISHED_ROOT_RUNS + " ORDER BY r.finished_at LIMIT ? FOR UPDATE OF r SKIP LOCKED) c";
    /** The operator locks of the hierarchies, tried: taken before {@link #PRUNABLE} reads (a statement of its own). */
    private static final String LOCK = """
            SELECT r FROM unnest(?::uuid[]) r WHERE pg_try_advisory_xact_lock(?, hashtext(r::text))
            """;
    /** The hierarchies still wholly finished before the cutoff, read once their operator locks are held. */
    private static final String PRUNABLE = """
            SELECT r FROM unnest(?::uuid[]) r
             WHERE NOT EXISTS (SELECT 1 FROM {schema}.run a
                                WHERE a.root_id = r AND a.status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD'))
               AND NOT EXISTS (SELECT 1 FROM {schema}.run o
                                WHERE o.message_id = r AND (o.finished_at IS NULL OR o.finished_at >= ?))
            """;
    /** The hierarchies, whole: the messages are those their log names (the roots' and every launched one). */
    private static final String DELETE_HIERARCHIES = """
            WITH m AS (SELECT DISTINCT message_id AS id FROM {schema}.event WHERE root_id = ANY (?::uuid[])),
                 e AS (DELETE FROM {schema}.event WHERE root_id = ANY (?::uuid[]) RETURNING 1),
                 r AS (DELETE FROM {schema}.run WHERE message_id IN (SELECT id FROM m) RETURNING id),
                 t AS (DELETE FROM {schema}.external_task WHERE run_id IN (SELECT id FROM r) RETURNING 1),
                 c AS (DELETE FROM {schema}.cancellation
                        WHERE scope_id IN (SELECT id FROM r) OR scope_id = ANY (?::uuid[]) RETURNING 1),
                 a AS (DELETE FROM {schema}.audit WHERE message_id IN (SELECT id FROM m) RETURNING 1),
                 d AS (DELETE FROM {schema}.message WHERE id IN (SELECT id FROM m) RETURNING 1)
            SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM e), (SELECT count(*) FROM d)
            """;
    private static final String COUNT = "SELECT count(DISTINCT r.root_id) " + FINISHED_ROOT_RUNS;
    private static final String SAMPLE_ROOTS = "SELECT r.root_id " + FINISHED_ROOT_RUNS
            + " GROUP BY r.root_id ORDER BY min(r.finished_at) LIMIT ?";

    /**
     * On Citus, {@link #FINISHED_ROOT_RUNS} with its runs of the root message joined by root as well, so that both
     * subqueries join {@code run} on its distribution column and Citus pushes them down to each shard (it refuses
     * the join by {@code message_id} alone). The root message's runs are in its own hierarchy: same rows.
     */
    private static final String FINISHED_ROOT_RUNS_BY_ROOT = dev.coop.internal.store.CitusLayout.rewritten(
            FINISHED_ROOT_RUNS, "WHERE o.message_id = r.message_id",
            "WHERE o.root_id = r.root_id AND o.message_id = r.message_id");
    /**
     * {@link #CANDIDATES} on Citus: read without a lock (one task per shard), since Citus refuses a {@code FOR UPDATE}
     * across shards. Pruners share the work through the operator locks, tried ({@link #LOCK}): a root another pruner
     * holds is left to it.
     */
    private static final String CANDIDATES_BY_ROOT = "SELECT DISTINCT c.root FROM (SELECT r.root_id AS root "
            + FINISHED_ROOT_RUNS_BY_ROOT + " ORDER BY r.finished_at LIMIT ?) c";
    /**
     * {@link #PRUNABLE} on Citus, read the other way round: the hierarchies of the batch that are no longer wholly
     * finished before the cutoff (Citus refuses {@link #PRUNABLE}'s subqueries correlated with an array's elements).
     * A root message's runs are those with {@code message_id = root_id}. Parameters: roots, cutoff.
     */
    private static final String BUSY_BY_ROOT = """
            SELECT DISTINCT root_id FROM {schema}.run
             WHERE root_id = ANY(?::uuid[])
               AND (status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD')
                    OR (message_id = root_id AND (finished_at IS NULL OR finished_at >= ?)))
            """;
    private static final String COUNT_BY_ROOT = "SELECT count(DISTINCT r.root_id) " + FINISHED_ROOT_RUNS_BY_ROOT;
    private static final String SAMPLE_ROOTS_BY_ROOT = "SELECT r.root_id " + FINISHED_ROOT_RUNS_BY_ROOT
            + " GROUP BY r.root_id ORDER BY min(r.finished_at) LIMIT ?";

    private final SchemaName schema;
    private final Time time;

    public Retention(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    /** Deletes every candidate hierarchy, {@value #BATCH} per transaction, and says what went. */
    public PruneResult pruneAll(DataSource dataSource, Duration olderThan) {
        long hierarchies = 0;
        long runs = 0;
        long events = 0;
        long messages = 0;
        List<MessageId> sample = new ArrayList<>();
        Instant cutoff = null;
        while (true) {
            PruneResult batch = Tx.run(dataSource, "delete finished hierarchies older than " + olderThan,
                    c -> pruneBatch(c, now(c).minus(olderThan)));
            cutoff = cutoff == null ? batch.cutoff() : cutoff;
            hierarchies += batch.hierarchies();
            runs += batch.runs();
            events += batch.events();
            messages += batch.messages();
            batch.sample().stream().limit(SAMPLE - sample.size()).forEach(sample::add);
            if (batch.hierarchies() == 0) {
                return new PruneResult(false, cutoff, hierarchies, runs, events, messages, List.copyOf(sample));
            }
        }
    }

    /** What {@link #pruneAll} would delete now. */
    public PruneResult dryRun(DataSource dataSource, Duration olderThan) {
        return Tx.run(dataSource, "count finished hierarchies older than " + olderThan,
                c -> dryRun(c, now(c).minus(olderThan)));
    }

    /**
     * Deletes up to {@value #BATCH} candidate hierarchies in the caller's transaction, in four statements, and the
     * counts over time ({@link RunCountRollup}) of the minutes before the cutoff (a range of the rollup's primary key).
     */
    PruneResult pruneBatch(Connection c, Instant cutoff) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(RunCountRollup.PRUNE))) {
            ps.setObject(1, at(cutoff));
            ps.executeUpdate();
        }
        List<UUID> roots = candidates(c, cutoff);
        if (!roots.isEmpty()) {
            roots = select(c, LOCK, roots, ps -> ps.setInt(2, Operations.OPERATOR_LOCK)); // busy: next time
        }
        if (!roots.isEmpty() && schema.citus()) {
            roots = new ArrayList<>(roots);
            roots.removeAll(select(c, schema.sql(BUSY_BY_ROOT), roots, ps -> ps.setObject(2, at(cutoff))));
        } else if (!roots.isEmpty()) {
            roots = select(c, schema.sql(PRUNABLE), roots, ps -> ps.setObject(2, at(cutoff)));
        }
        if (roots.isEmpty()) {
            return new PruneResult(false, cutoff, 0, 0, 0, 0, List.of());
        }
        if (schema.citus()) { // the hierarchies' launch keys and turns, on the coordinator (schema version 31)
            try (PreparedStatement ps = c.prepareStatement(schema.sql(
                    "WITH k AS (DELETE FROM {schema}.launch_key WHERE root_id = ANY (?::uuid[]))"
                            + " DELETE FROM {schema}.key_turn WHERE root_id = ANY (?::uuid[])"))) {
                var array = c.createArrayOf("uuid", roots.toArray());
                ps.setArray(1, array);
                ps.setArray(2, array);
                ps.executeUpdate();
            }
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(DELETE_HIERARCHIES))) {
            var array = c.createArrayOf("uuid", roots.toArray());
            ps.setArray(1, array);
            ps.setArray(2, array);
            ps.setArray(3, array);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                List<MessageId> sample = roots.stream().limit(SAMPLE).map(MessageId::new).toList();
                return new PruneResult(false, cutoff, roots.size(), rs.getLong(1), rs.getLong(2), rs.getLong(3),
                        sample);
            }
        }
    }

    private interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }

    /** The roots {@code sql} (taking them as its first parameter) returns. */
    private static List<UUID> select(Connection c, String sql, List<UUID> roots, Binder more) throws SQLException {
        List<UUID> kept = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setArray(1, c.createArrayOf("uuid", roots.toArray()));
            more.bind(ps);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    kept.add(rs.getObject(1, UUID.class));
                }
            }
        }
        return kept;
    }

    /** What {@link #pruneBatch} would delete, all batches together, without deleting or locking anything. */
    PruneResult dryRun(Connection c, Instant cutoff) throws SQLException {
        long hierarchies;
        try (PreparedStatement ps = c.prepareStatement(schema.sql(schema.citus() ? COUNT_BY_ROOT : COUNT))) {
            ps.setObject(1, at(cutoff));
            ps.setObject(2, at(cutoff));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                hierarchies = rs.getLong(1);
            }
        }
        List<MessageId> sample = new ArrayList<>();
        try (PreparedStatement ps = c
                .prepareStatement(schema.sql(schema.citus() ? SAMPLE_ROOTS_BY_ROOT : SAMPLE_ROOTS))) {
            ps.setObject(1, at(cutoff));
            ps.setObject(2, at(cutoff));
            ps.setInt(3, SAMPLE);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    sample.add(new MessageId(rs.getObject(1, UUID.class)));
                }
            }
        }
        return new PruneResult(true, cutoff, hierarchies, 0, 0, 0, List.copyOf(sample));
    }

    private List<UUID> candidates(Connection c, Instant cutoff) throws SQLException {
        List<UUID> roots = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(schema.citus() ? CANDIDATES_BY_ROOT : CANDIDATES))) {
            ps.setObject(1, at(cutoff));
            ps.setObject(2, at(cutoff));
            ps.setInt(3, BATCH);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    roots.add(rs.getObject(1, UUID.class));
                }
            }
        }
        return roots;
    }

    /** The engine's time (the database's clock unless a time source is given): every engine and client agrees. */
    Instant now(Connection c) throws SQLException {
        return time.now(c);
    }

    private static OffsetDateTime at(Instant instant) {
        return OffsetDateTime.ofInstant(instant, ZoneOffset.UTC);
    }
}
