package dev.coop.internal.read;

import dev.coop.internal.store.LogNames;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.ClaimSql;

import dev.coop.inspect.RunningStep;
import dev.coop.inspect.StepView;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Which of some runs an engine executes right now, and since when: derived from what a claim already leaves, without
 * any write. A step's transaction holds its run's row lock (the row's {@code xmax} is the transaction's id), and the
 * claim names its engine in the transaction's {@code application_name} ({@link ClaimSql#RUNNING_AS}); the database's view
 * of its sessions ({@code pg_stat_activity}) tells the rest: when that transaction started, and when its connection
 * last started or finished a statement. One statement for any number of runs. Not on Citus: a step's row lock is
 * held by a worker's transaction, whose {@code xmax} the coordinator's {@code pg_stat_activity} does not know, so
 * trees and listings there show no running steps (docs/guide/citus.md, "The reads").
 */
final class RunningSteps {
    private final SchemaName schema;

    RunningSteps(SchemaName schema) {
        this.schema = schema;
    }

    /** What the run row says of the step being executed, before the step's name on the rollback path is known. */
    record Live(boolean rollback, String nextStep, Integer rollbackSeq, String rollbackStage, int attempt,
            OffsetDateTime since, String engine, OffsetDateTime lastActivity) {

        /** The running step, named from the run's logged steps when it rolls back (they say what it undoes). */
        RunningStep view(List<StepView> steps) {
            return new RunningStep(rollback ? rollbackName(steps) : nextStep, since, engine, attempt, lastActivity);
        }

        private String rollbackName(List<StepView> steps) {
            int seq = 0;
            String undone = null;
            for (StepView s : steps) { // the n-th committed step or handler transaction is instance n
                boolean instance = s.failure() == null
                        && (s.kind() == StepView.Kind.STEP || s.kind() == StepView.Kind.CHILD_FAILURE_HANDLER);
                if (instance && rollbackSeq != null && seq++ == rollbackSeq) {
                    undone = s.name();
                }
            }
            if (undone == null) {
                return "rollback";
            }
            return LogNames.ROLLBACK_PREFIX + undone
                    + ("CHILDREN".equals(rollbackStage) ? LogNames.CHILDREN_SUFFIX : "");
        }
    }

    /** The runs of {@code runnable} that a step transaction holds now, by id. */
    Map<UUID, Live> read(Connection c, List<UUID> runnable) throws SQLException {
        if (runnable.isEmpty() || schema.citus()) {
            return Map.of();
        }
        Map<UUID, Live> live = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema
                .sql("""
                        SELECT r.id, r.phase = 'ROLLBACK',
                               coalesce(r.next_step, (SELECT v.first_step FROM {schema}.saga_version v -- before its first advance
                                                       WHERE r.step_index = 0 AND v.saga = r.saga AND v.version = r.saga_version)),
                               r.rollback_seq, r.rollback_stage, r.attempt,
                               a.xact_start, a.application_name, a.state_change
                          FROM {schema}.run r JOIN pg_stat_activity a ON a.backend_xid = r.xmax
                         WHERE r.id = ANY(?) AND r.status = 'RUNNABLE'
                        """))) {
            ps.setArray(1, c.createArrayOf("uuid", runnable.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String app = rs.getString(8);
                    live.put(rs.getObject(1, UUID.class), new Live(rs.getBoolean(2), rs.getString(3),
                            rs.getObject(4, Integer.class), rs.getString(5), rs.getInt(6),
                            rs.getObject(7, OffsetDateTime.class),
                            app != null && app.startsWith(ClaimSql.RUNNING_AS)
                                    ? app.substring(ClaimSql.RUNNING_AS.length())
                                    : null,
                            rs.getObject(9, OffsetDateTime.class)));
                }
            }
        }
        return live;
    }
}
