package dev.coop.internal.read;

import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.internal.store.SchemaName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** Lists and counts runs by a {@link RunQuery}; every condition is a fixed fragment with a bound value. */
public final class RunListing {
    /** A page of runs, newest first: the filters, then the newest along index {@code run_created}. */
    private static final String RUNS = """
            SELECT r.id, r.message_id, m.topic, r.saga, r.lineage, %1$s, r.created_at, r.finished_at,
                   r.failure->>'message', r.saga_version
              FROM {schema}.run r JOIN {schema}.message m ON {messageOfRun}
             WHERE %2$s
             ORDER BY r.created_at DESC, r.id DESC
             LIMIT ?
            """;

    /** How many of the newest runs a query by tag looks through before it reads the tag index instead. */
    static final int TAG_WALK = 10_000;

    /** By tag, first among the {@link #TAG_WALK} newest runs: a common tag fills its page there. */
    private static final String RUNS_AMONG_NEWEST = """
            SELECT r.id, r.message_id, m.topic, r.saga, r.lineage, %1$s, r.created_at, r.finished_at,
                   r.failure->>'message', r.saga_version
              FROM (SELECT id, root_id, message_id, saga, lineage, status, pending_children, created_at, finished_at,
                           failure, saga_version
                      FROM {schema}.run ORDER BY created_at DESC, id DESC LIMIT %3$d) r
              JOIN {schema}.message m ON {messageOfRun}
             WHERE %2$s
             ORDER BY r.created_at DESC, r.id DESC
             LIMIT ?
            """;

    /**
     * By tag, the tagged messages first (index {@code message_tags}), then each one's runs (index
     * {@code run_message}): fences ({@code OFFSET 0}, a lateral join) fix that order, whatever the planner guesses.
     * PostgreSQL estimates a tag absent from its statistics (most tags, when a few are common) at up to 0.5 % of the
     * messages, and with that guess it would rather walk {@code run_created} backwards: on ten million runs, a tag of
     * ten runs took longer than the client's timeout.
     */
    private static final String RUNS_TAG_FIRST = """
            SELECT r.id, r.message_id, m.topic, r.saga, r.lineage, %1$s, r.created_at, r.finished_at,
                   r.failure->>'message', r.saga_version
              FROM (SELECT * FROM {schema}.message x WHERE x.tags @> ARRAY[?::text] OFFSET 0) m
             CROSS JOIN LATERAL (SELECT * FROM {schema}.run x WHERE x.message_id = m.id OFFSET 0) r
             WHERE %2$s
             ORDER BY r.created_at DESC, r.id DESC
             LIMIT ?
            """;

    /**
     * {@link #RUNS_TAG_FIRST} on Citus, which refuses its fences ("Offset clause is currently unsupported when a
     * lateral subquery references a column from complex subqueries"): a co-located join, planned on each shard.
     */
    private static final String RUNS_TAG_FIRST_SHARDED = """
            SELECT r.id, r.message_id, m.topic, r.saga, r.lineage, %1$s, r.created_at, r.finished_at,
                   r.failure->>'message', r.saga_version
              FROM {schema}.message m JOIN {schema}.run r ON r.root_id = m.root_id AND r.message_id = m.id
             WHERE m.tags @> ARRAY[?::text] AND %2$s
             ORDER BY r.created_at DESC, r.id DESC
             LIMIT ?
            """;

    private final SchemaName schema;

    public RunListing(SchemaName schema) {
        this.schema = schema;
    }

    /**
     * A listing's SQL with its join of run {@code r} to message {@code m}: by the message's id, and on Citus by the
     * root too, which makes it a co-located join (one task per shard). Plain PostgreSQL keeps the join by id alone:
     * with both columns it estimates the join at a row or two, and then prefers a hash join over whole tables to
     * walking {@code run_created} until the page is full (measured: 24 ms instead of 0.3 ms for 50 of 6000 runs).
     */
    private String sql(String template) {
        return schema.sql(template.replace("{messageOfRun}",
                schema.citus() ? "m.root_id = r.root_id AND m.id = r.message_id" : "m.id = r.message_id"));
    }

    /**
     * Runs newest first, filtered. By tag, two bounded reads instead of the planner's guess: the newest
     * {@link #TAG_WALK} runs (a common tag fills its page there), else the runs of the tagged messages.
     */
    public List<RunSummary> runs(Connection c, RunQuery q) throws SQLException {
        StringBuilder where = new StringBuilder("TRUE");
        List<Object> values = new ArrayList<>();
        filter(q, where, values);
        if (q.tag() == null) {
            return page(c, RUNS.formatted(Inspection.shownStatus("r"), where), values, q.limit());
        }
        List<RunSummary> newest = page(c, RUNS_AMONG_NEWEST.formatted(Inspection.shownStatus("r"), where, TAG_WALK),
                values,
                q.limit());
        if (newest.size() >= q.limit()) {
            return newest;
        }
        List<Object> tagFirst = new ArrayList<>(values);
        tagFirst.addFirst(q.tag());
        return page(c, (schema.citus() ? RUNS_TAG_FIRST_SHARDED : RUNS_TAG_FIRST)
                .formatted(Inspection.shownStatus("r"), where), tagFirst, q.limit());
    }

    private List<RunSummary> page(Connection c, String sql, List<Object> values, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql(sql))) {
            int i = 0;
            for (Object v : values) {
                ps.setObject(++i, v);
            }
            ps.setInt(++i, limit);
            List<RunSummary> runs = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    runs.add(new RunSummary(rs.getObject(1, UUID.class), new MessageId(rs.getObject(2, UUID.class)),
                            rs.getString(3), rs.getString(4),
                            new Lineage(Arrays.asList((UUID[]) rs.getArray(5).getArray())),
                            RunStatus.valueOf(rs.getString(6)), rs.getObject(7, OffsetDateTime.class),
                            rs.getObject(8, OffsetDateTime.class), rs.getString(9), rs.getInt(10)));
                }
            }
            return withRunning(c, runs);
        }
    }

    /**
     * The page's runs an engine executes now marked with their step ({@link RunningSteps}: one statement over the
     * page's runnable runs, none when it has none).
     */
    private List<RunSummary> withRunning(Connection c, List<RunSummary> runs) throws SQLException {
        List<UUID> runnable = runs.stream().filter(r -> r.status() == RunStatus.RUNNABLE).map(RunSummary::runId)
                .toList();
        Map<UUID, RunningSteps.Live> live = new RunningSteps(schema).read(c, runnable);
        if (live.isEmpty()) {
            return runs;
        }
        return runs.stream().map(r -> {
            RunningSteps.Live l = live.get(r.runId());
            return l == null ? r : r.withRunning(l.view(List.of()));
        }).toList();
    }

    /** How many runs match the query's status, saga, topic and age (its limit does not apply), by status. */
    public Map<RunStatus, Long> countRuns(Connection c, RunQuery q) throws SQLException {
        StringBuilder where = new StringBuilder("TRUE");
        List<Object> values = new ArrayList<>();
        filter(q, where, values);
        try (PreparedStatement ps = c.prepareStatement(sql("""
                SELECT %1$s, count(*) FROM {schema}.run r JOIN {schema}.message m ON {messageOfRun}
                 WHERE %2$s GROUP BY 1
                """.formatted(Inspection.shownStatus("r"), where)))) {
            int i = 0;
            for (Object v : values) {
                ps.setObject(++i, v);
            }
            Map<RunStatus, Long> counts = new EnumMap<>(RunStatus.class);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.put(RunStatus.valueOf(rs.getString(1)), rs.getLong(2));
                }
            }
            return counts;
        }
    }

    /**
     * The query's conditions as fixed fragments, each with a bound value ({@code r}: the run, {@code m}: its message).
     */
    public static void filter(RunQuery q, StringBuilder where, List<Object> values) {
        if (q.status() == RunStatus.WAITING) {
            where.append(" AND (r.status = 'WAITING' OR (r.status = 'RUNNABLE' AND r.pending_children > 0))");
        } else if (q.status() == RunStatus.RUNNABLE) {
            where.append(" AND r.status = 'RUNNABLE' AND r.pending_children = 0");
        } else if (q.status() != null) {
            where.append(" AND r.status = ?");
            values.add(q.status().name());
        }
        if (q.saga() != null) {
            where.append(" AND r.saga = ?");
            values.add(q.saga());
        }
        if (q.topic() != null) {
            where.append(" AND m.topic = ?");
            values.add(q.topic());
        }
        if (q.since() != null) {
            where.append(" AND r.created_at >= ?");
            values.add(q.since());
        }
        if (q.before() != null) {
            where.append(" AND r.created_at < ?");
            values.add(q.before());
        }
        if (q.businessKey() != null) { // index message_business_key, then run_message
            where.append(" AND m.business_key = ?");
            values.add(q.businessKey());
        }
        if (q.tag() != null) { // index message_tags (GIN)
            where.append(" AND m.tags @> ARRAY[?::text]");
            values.add(q.tag());
        }
        if (q.failureType() != null) { // the class name, or its simple name
            where.append(" AND (r.failure->>'type' = ? OR right(r.failure->>'type', length(?) + 1) = '.' || ?)");
            values.add(q.failureType());
            values.add(q.failureType());
            values.add(q.failureType());
        }
    }
}
