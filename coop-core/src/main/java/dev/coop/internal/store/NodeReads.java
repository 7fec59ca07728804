package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.postgresql.util.PSQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's two reads of every shard (the claim's candidates, the probe) made one worker at a time while a worker
 * of the cluster is unreachable (docs/guide/citus.md, "Faults"). Citus runs a read of a distributed table without its
 * distribution column on every shard, and fails it as a whole when one worker does not answer; the engine then found
 * no work at all, on any worker, until the stopped one was back. Here each worker is read apart, through a function
 * that Citus delegates to the worker holding its first argument's shard ({@link CitusNodeFunctions}: it reads that
 * worker's own shards of {@code run}), and a worker that does not answer is skipped: hierarchies on the live workers
 * go on, the ones on the stopped worker wait for it.
 *
 * <p>
 * The full read is tried again {@link #RETRY_MILLIS} after it failed, and an unreachable worker is skipped for as
 * long: a failure costs the coordinator's connection (the pool takes a connection error for a broken connection), so
 * a down worker is asked about once per period, not once per claim. Between workers the candidates come in each
 * worker's claim order, not merged: a claim may take a lower-priority run on one worker before a higher one on
 * another while a worker is down.
 */
final class NodeReads {
    private static final Logger log = LoggerFactory.getLogger(NodeReads.class);
    /** How long the full read is not tried again after it failed, and an unreachable worker is skipped. */
    static final long RETRY_MILLIS = 2_000;

    /**
     * One anchor per worker: a root whose {@code run} shard that worker holds, from the coordinator's metadata alone
     * (which answers while a worker is down). The roots are fixed ({@code md5} of 1..512: with the default 32 shards
     * every shard has one); a worker that holds no shard of {@code run} has no anchor and nothing to read.
     */
    private static final String ANCHORS = """
            SELECT DISTINCT ON (p.groupid) n.nodename || ':' || n.nodeport, a.root
              FROM (SELECT md5(g::text)::uuid AS root FROM generate_series(1, 512) AS g) a
              JOIN pg_dist_placement p
                ON p.shardid = get_shard_id_for_distribution_column('{schema}.run', a.root)
              JOIN pg_dist_node n ON n.groupid = p.groupid
             ORDER BY p.groupid, a.root
            """;

    private final String anchorsSql;
    private final String candidatesSql;
    private final String dueSql;
    /** {@link System#nanoTime()} until which the full reads are not tried, after one failed; 0: try them. */
    private volatile long perNodeUntil;
    /** Whether a full read failed and none answered since (for the log). */
    private volatile boolean degraded;
    /** Workers ({@code host:port}) that did not answer, until when they are skipped. */
    private final Map<String, Long> skipped = new ConcurrentHashMap<>();

    NodeReads(SchemaName schema) {
        this.anchorsSql = schema.sql(ANCHORS);
        this.candidatesSql = schema.sql(CitusNodeFunctions.CANDIDATES_CALL);
        this.dueSql = schema.sql(CitusNodeFunctions.DUE_CALL);
    }

    /**
     * Whether {@code e} is Citus's report that a worker could not be reached (a connection error the coordinator
     * answered with): the coordinator itself answered, so the other workers may be read.
     */
    static boolean unreachableWorker(SQLException e) {
        if (!(e instanceof PSQLException p) || p.getServerErrorMessage() == null) {
            return false; // the driver's own: the coordinator is the one that is gone
        }
        String state = e.getSQLState();
        String message = String.valueOf(p.getServerErrorMessage().getMessage());
        return (state != null && state.startsWith("08")) || message.startsWith("connection to the remote node")
                || message.startsWith("could not establish any connections to the node");
    }

    /** Whether the full reads failed less than {@link #RETRY_MILLIS} ago: read per worker instead. */
    boolean perNode() {
        long until = perNodeUntil;
        return until != 0 && System.nanoTime() - until < 0;
    }

    /** Records that a full read failed with {@code e} ({@link #unreachableWorker}): per worker for a while. */
    void fullReadFailed(SQLException e) {
        perNodeUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RETRY_MILLIS);
        if (!degraded) { // said once until the whole cluster answers again
            degraded = true;
            log.warn("A worker of the Citus cluster is unreachable ({}): the claims and probes read each worker"
                    + " apart and skip the ones that do not answer, and try the whole cluster again in {} ms",
                    e.getMessage(), RETRY_MILLIS);
        }
    }

    /** Records that a full read answered: said once after {@link #fullReadFailed}. */
    void fullReadAnswered() {
        if (degraded) {
            degraded = false;
            log.info("Every worker of the Citus cluster answers again: the claims and probes read the whole cluster");
        }
    }

    /** The claim's candidates ({@link ShardedClaims#CANDIDATES}), up to {@code limit} from each live worker. */
    List<ShardedClaims.Candidate> candidates(Connection c, String saga, int version, OffsetDateTime now, int limit,
            int offset) throws SQLException {
        List<ShardedClaims.Candidate> out = new ArrayList<>();
        eachWorker(c, candidatesSql, anchor -> {
            int i = 0;
            anchor.ps().setObject(++i, anchor.root());
            anchor.ps().setString(++i, saga);
            anchor.ps().setInt(++i, version);
            anchor.ps().setObject(++i, now);
            anchor.ps().setInt(++i, limit);
            anchor.ps().setInt(++i, offset);
            try (ResultSet rs = anchor.ps().executeQuery()) {
                while (rs.next()) {
                    out.add(new ShardedClaims.Candidate(rs.getObject(1, UUID.class), rs.getObject(2, UUID.class),
                            anchor.worker()));
                }
            }
        });
        return out;
    }

    /** The probe ({@link ProbeSql#PROBE_SHARDED}) of each live worker, merged: when each saga's runs are due. */
    Map<String, Due> due(Connection c, List<String> names, List<Integer> versions, OffsetDateTime now)
            throws SQLException {
        Map<String, Due> due = new HashMap<>();
        eachWorker(c, dueSql, anchor -> {
            anchor.ps().setObject(1, anchor.root());
            anchor.ps().setArray(2, c.createArrayOf("text", names.toArray()));
            anchor.ps().setArray(3, c.createArrayOf("integer", versions.toArray()));
            anchor.ps().setObject(4, now);
            try (ResultSet rs = anchor.ps().executeQuery()) {
                while (rs.next()) {
                    due.merge(rs.getString(1), new Due(rs.getLong(2), rs.getObject(3, Long.class)), Due::earliest);
                }
            }
        });
        return due;
    }

    /** A worker's anchor root, with the statement to bind it in. */
    private record Anchor(PreparedStatement ps, UUID root, String worker) {
    }

    /** What is read of one worker. */
    private interface WorkerRead {
        void read(Anchor anchor) throws SQLException;
    }

    /**
     * Runs {@code read} for each worker not skipped, each in a transaction of its own ({@code c} is in auto-commit):
     * a worker that does not answer is skipped from then on, for {@link #RETRY_MILLIS}. Fails with the first failure
     * when no worker answered.
     */
    private void eachWorker(Connection c, String sql, WorkerRead read) throws SQLException {
        Map<String, UUID> anchors = anchors(c);
        SQLException unanswered = null;
        int answered = 0;
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (Map.Entry<String, UUID> worker : anchors.entrySet()) {
                Long until = skipped.get(worker.getKey());
                if (until != null && System.nanoTime() - until < 0) {
                    continue;
                }
                try {
                    read.read(new Anchor(ps, worker.getValue(), worker.getKey()));
                    skipped.remove(worker.getKey());
                    answered++;
                } catch (SQLException e) {
                    if (!unreachableWorker(e)) {
                        throw e;
                    }
                    skipped.put(worker.getKey(), System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RETRY_MILLIS));
                    log.debug("Citus worker {} did not answer; skipped for {} ms", worker.getKey(), RETRY_MILLIS, e);
                    if (unanswered == null) {
                        unanswered = e;
                    }
                }
            }
        }
        if (answered == 0 && !anchors.isEmpty()) {
            throw unanswered != null
                    ? unanswered
                    : new SQLException("No worker of the Citus cluster answered in the last " + RETRY_MILLIS
                            + " ms (" + anchors.keySet() + ")", "08006");
        }
    }

    private Map<String, UUID> anchors(Connection c) throws SQLException {
        Map<String, UUID> anchors = new java.util.LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(anchorsSql); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                anchors.put(rs.getString(1), rs.getObject(2, UUID.class));
            }
        }
        return anchors;
    }
}
