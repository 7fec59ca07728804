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
 * last started or finished a statement. One statement for any number of runs. On Citus a step's row lock is held by
 * a worker's transaction, whose {@code xmax} the coordinator's {@code pg_stat_activity} does not know: there the
 * cluster's view ({@code citus_stat_activity}) names the worker backend that has that transaction id on the row's
 * worker, and its global process id names the coordinator backend whose transaction it serves (three statements:
 * the runs, their workers, the activity; docs/guide/citus.md, "The reads").
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
        if (runnable.isEmpty()) {
            return Map.of();
        }
        if (schema.citus()) {
            return onCitus(c, runnable);
        }
        Map<UUID, Live> live = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(RUN + """
                       a.xact_start, a.application_name, a.state_change
                  FROM {schema}.run r JOIN pg_stat_activity a ON a.backend_xid = r.xmax
                 WHERE r.id = ANY(?) AND r.status = 'RUNNABLE'
                """))) {
            ps.setArray(1, c.createArrayOf("uuid", runnable.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    live.put(rs.getObject(1, UUID.class), live(rs, rs.getObject(7, OffsetDateTime.class),
                            rs.getString(8), rs.getObject(9, OffsetDateTime.class)));
                }
            }
        }
        return live;
    }

    /** What both forms read of the run, first. */
    private static final String RUN = """
            SELECT r.id, r.phase = 'ROLLBACK',
                   coalesce(r.next_step, (SELECT v.first_step FROM {schema}.saga_version v -- before its first advance
                                           WHERE r.step_index = 0 AND v.saga = r.saga AND v.version = r.saga_version)),
                   r.rollback_seq, r.rollback_stage, r.attempt,
            """;

    /**
     * The worker backends that have a transaction id, each with the coordinator backend it serves (same global
     * process id): by worker node and transaction id, the coordinator transaction's start and last activity, and
     * the engine's name, which the claim sets on the worker ({@link ClaimSql#CLAIM_LOCK} is routed there). Parameter:
     * {@link ClaimSql#RUNNING_AS}.
     */
    private static final String CLUSTER_ACTIVITY = """
            WITH a AS MATERIALIZED (
              SELECT nodeid, global_pid, is_worker_query, backend_xid, xact_start, application_name, state_change
                FROM citus_stat_activity WHERE backend_type = 'client backend')
            SELECT w.nodeid, w.backend_xid::text, c.xact_start,
                   CASE WHEN starts_with(w.application_name, ?) THEN w.application_name ELSE c.application_name END,
                   c.state_change
              FROM a w JOIN a c ON c.global_pid = w.global_pid AND NOT c.is_worker_query
             WHERE w.is_worker_query AND w.backend_xid IS NOT NULL
            """;

    /** The node of each root's {@code run} shard, from the coordinator's metadata. */
    private static final String NODES = """
            SELECT u.root, n.nodeid FROM unnest(?::uuid[]) AS u(root)
              JOIN pg_dist_placement p ON p.shardid = get_shard_id_for_distribution_column('{schema}.run', u.root)
              JOIN pg_dist_node n ON n.groupid = p.groupid
            """;

    /** {@link #read} on Citus: the runs with their row's {@code xmax}, their workers, the cluster's activity. */
    private Map<UUID, Live> onCitus(Connection c, List<UUID> runnable) throws SQLException {
        Map<String, Object[]> activity = new HashMap<>(); // "node:xid" -> start, name, last activity
        try (PreparedStatement ps = c.prepareStatement(CLUSTER_ACTIVITY)) {
            ps.setString(1, ClaimSql.RUNNING_AS);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    activity.put(rs.getInt(1) + ":" + rs.getString(2), new Object[]{rs.getObject(3,
                            OffsetDateTime.class), rs.getString(4), rs.getObject(5, OffsetDateTime.class)});
                }
            }
        }
        if (activity.isEmpty()) {
            return Map.of();
        }
        Map<UUID, String[]> locked = new HashMap<>(); // run -> root, xmax
        Map<UUID, Live> rows = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(RUN + """
                       NULL::timestamptz, NULL::text, NULL::timestamptz, r.root_id, r.xmax::text
                  FROM {schema}.run r
                 WHERE r.id = ANY(?) AND r.status = 'RUNNABLE' AND r.xmax <> '0'::xid
                """))) {
            ps.setArray(1, c.createArrayOf("uuid", runnable.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    UUID id = rs.getObject(1, UUID.class);
                    rows.put(id, live(rs, null, null, null));
                    locked.put(id, new String[]{rs.getString(10), rs.getString(11)});
                }
            }
        }
        Map<UUID, Integer> nodes = nodesOf(c, locked.values().stream().map(r -> UUID.fromString(r[0])).toList());
        Map<UUID, Live> live = new HashMap<>();
        rows.forEach((id, row) -> {
            String[] lock = locked.get(id);
            Object[] a = activity.get(nodes.get(UUID.fromString(lock[0])) + ":" + lock[1]);
            if (a != null) {
                live.put(id, new Live(row.rollback(), row.nextStep(), row.rollbackSeq(), row.rollbackStage(),
                        row.attempt(), (OffsetDateTime) a[0], engineOf((String) a[1]), (OffsetDateTime) a[2]));
            }
        });
        return live;
    }

    private Map<UUID, Integer> nodesOf(Connection c, List<UUID> roots) throws SQLException {
        Map<UUID, Integer> nodes = new HashMap<>();
        if (roots.isEmpty()) {
            return nodes;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(NODES))) {
            ps.setArray(1, c.createArrayOf("uuid", roots.stream().distinct().toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    nodes.put(rs.getObject(1, UUID.class), rs.getInt(2));
                }
            }
        }
        return nodes;
    }

    /** A run's row as {@link #RUN} reads it, with its step transaction's start, name and last activity. */
    private static Live live(ResultSet rs, OffsetDateTime since, String app, OffsetDateTime lastActivity)
            throws SQLException {
        return new Live(rs.getBoolean(2), rs.getString(3), rs.getObject(4, Integer.class), rs.getString(5),
                rs.getInt(6), since, engineOf(app), lastActivity);
    }

    /** The engine a claim named in its transaction's {@code application_name}, or null. */
    private static String engineOf(String app) {
        return app != null && app.startsWith(ClaimSql.RUNNING_AS) ? app.substring(ClaimSql.RUNNING_AS.length()) : null;
    }
}
