package dev.coop.internal.store;

import dev.coop.MessageId;
import dev.coop.RunStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * What a step asks about the runs it caused (their results, their failures, the ones not started) and what it does
 * to them (detach, settle, ask to roll back); and the results of a message's runs for a client.
 */
final class ChildQueries {
    private final SchemaName schema;
    private final Time time;

    private final String requestChildRollbacksSql;

    private final String childFailuresSql;
    private final String childResultsSql;
    private final String countUnstartedSql;
    private final String detachUnstartedSql;
    /** On Citus, the unstarted children's statements by the parent's root; null on plain PostgreSQL. */
    private final RootChildren byRoot;
    /** On Citus, the request of child rollbacks by the parent's root; null on plain PostgreSQL. */
    private final RootChildRollbacks rollbacksByRoot;

    /** The sagas whose runs the caller wakes in-process, comma-separated ({@link Wakes}). */
    private final String localSagas;

    ChildQueries(SchemaName schema, Time time, String localSagas) {
        this.localSagas = localSagas;
        this.schema = schema;
        this.time = time;
        this.requestChildRollbacksSql = schema.sql(ChildSql.REQUEST_CHILD_ROLLBACKS);
        this.childFailuresSql = schema.sql(ChildSql.CHILD_FAILURES);
        this.childResultsSql = schema.sql(ChildSql.CHILD_RESULTS);
        this.countUnstartedSql = schema.sql(ChildSql.COUNT_UNSTARTED);
        this.detachUnstartedSql = schema.sql(ChildSql.DETACH_UNSTARTED);
        this.byRoot = schema.citus() ? new RootChildren(schema, time) : null;
        this.rollbacksByRoot = schema.citus() ? new RootChildRollbacks(schema, time) : null;
    }

    /**
     * Asks the runs caused by step instance {@code seq} of {@code run} to roll back, logging ROLLBACK_EMITTED.
     *
     * @return the runs asked, per saga; the caller waits for all of them
     */
    public Map<String, Integer> requestChildRollbacks(Connection c, ClaimedRun run, String engine, String step,
            String cause, int seq, String parentContext) throws SQLException {
        if (rollbacksByRoot != null) {
            return rollbacksByRoot.request(c, run, engine, step, cause, seq, parentContext);
        }
        try (PreparedStatement ps = c.prepareStatement(requestChildRollbacksSql)) {
            int i = 0;
            ps.setObject(++i, run.id());
            ps.setInt(++i, seq);
            ps.setObject(++i, run.rootId());
            ps.setString(++i, run.saga());
            ps.setString(++i, engine);
            ps.setString(++i, step);
            ps.setArray(++i, c.createArrayOf("uuid", run.lineage()));
            ps.setString(++i, cause);
            ps.setString(++i, parentContext);
            ps.setString(++i, cause);
            ps.setObject(++i, time.bind());
            ps.setString(++i, localSagas);
            Map<String, Integer> woken = new HashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    woken.put(rs.getString(1), rs.getInt(2));
                }
            }
            return woken;
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
    public int detachUnstarted(Connection c, UUID rootId, UUID runId, int seq) throws SQLException {
        if (byRoot != null) {
            return byRoot.detachUnstarted(c, rootId, runId, seq);
        }
        return count(c, detachUnstartedSql, runId, seq);
    }

    /**
     * Settles the awaited runs caused by step instance {@code seq} that have not started, without running them
     * (their parent gave up); see {@link ChildSql#SETTLE_UNSTARTED}.
     *
     * @return the messages of the settled runs, one entry per run
     */
    public List<UUID> settleUnstarted(Connection c, UUID rootId, UUID runId, int seq, String failure,
            String engine) throws SQLException {
        if (byRoot != null) {
            return byRoot.settleUnstarted(c, rootId, runId, seq, failure, engine);
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(ChildSql.SETTLE_UNSTARTED))) {
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
}
