package dev.coop.internal.store;

import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.internal.EngineSagas;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Reads that change nothing: when sagas' runs are due, whether a scope was cancelled (with the engine's time), a
 * message's existence, its runs' statuses and its hierarchy's events.
 */
final class Probes {
    private final SchemaName schema;
    private final Time time;

    private final String probeSql;
    private final String probeShardedSql;
    /** Whether the schema has the Citus layout ({@link ProbeSql#PROBE_SHARDED}). */
    private volatile boolean sharded;

    private final String runStatusesSql;
    private final String eventsSql;

    private final NodeReads nodeReads;

    Probes(SchemaName schema, Time time, NodeReads nodeReads) {
        this.nodeReads = nodeReads;
        this.schema = schema;
        this.time = time;
        this.probeSql = schema.sql(ProbeSql.PROBE);
        this.probeShardedSql = schema.sql(ProbeSql.PROBE_SHARDED);
        this.runStatusesSql = schema.sql(ProbeSql.RUN_STATUSES);
        this.eventsSql = schema.sql(ProbeSql.EVENTS);
    }

    /**
     * For each saga with runnable runs of the given versions, when they are due (the earliest over its versions); two
     * index probes per saga version.
     */
    public Map<String, Due> probe(Connection c, EngineSagas sagas) throws SQLException {
        List<String> names = new ArrayList<>();
        List<Integer> versions = new ArrayList<>();
        for (String name : sagas.names()) {
            for (int version : sagas.versions(name)) {
                names.add(name);
                versions.add(version);
            }
        }
        OffsetDateTime now = time.bind();
        if (!sharded) {
            return probe(c, false, names, versions, now);
        }
        if (!nodeReads.perNode() || !c.getAutoCommit()) {
            try {
                Map<String, Due> due = probe(c, true, names, versions, now);
                nodeReads.fullReadAnswered();
                return due;
            } catch (SQLException e) {
                if (!NodeReads.unreachableWorker(e) || !c.getAutoCommit()) {
                    throw e;
                }
                nodeReads.fullReadFailed(e); // a worker is down: read the others apart
            }
        }
        return nodeReads.due(c, names, versions, now);
    }

    private Map<String, Due> probe(Connection c, boolean citus, List<String> names, List<Integer> versions,
            OffsetDateTime now) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(citus ? probeShardedSql : probeSql)) {
            int at = citus ? 4 : 1;
            ps.setArray(at, c.createArrayOf("text", names.toArray()));
            ps.setArray(at + 1, c.createArrayOf("integer", versions.toArray()));
            at = citus ? 1 : 3;
            ps.setObject(at, now);
            ps.setObject(at + 1, now);
            ps.setObject(at + 2, now);
            Map<String, Due> due = new HashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    due.merge(rs.getString(1), new Due(rs.getLong(2), rs.getObject(3, Long.class)), Due::earliest);
                }
            }
            return due;
        }
    }

    /** On Citus: the probe without its recursive CTE ({@link ProbeSql#PROBE_SHARDED}). */
    void sharded(boolean citus) {
        this.sharded = citus;
    }

    /** The failure JSON of a cancellation of any scope in {@code lineage} (of hierarchy {@code root}), or null. */
    public String cancellation(Connection c, UUID root, UUID[] lineage) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "SELECT failure::text FROM {schema}.cancellation WHERE root_id = ? AND scope_id = ANY(?)"
                        + " ORDER BY cardinality(lineage) LIMIT 1"))) {
            ps.setObject(1, root);
            ps.setArray(2, c.createArrayOf("uuid", lineage));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    public Liveness liveness(Connection c, UUID root, UUID[] lineage) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "SELECT (SELECT failure::text FROM {schema}.cancellation WHERE root_id = ? AND scope_id = ANY(?)"
                        + " ORDER BY cardinality(lineage) LIMIT 1), {now}"))) {
            ps.setObject(1, root);
            ps.setArray(2, c.createArrayOf("uuid", lineage));
            ps.setObject(3, time.bind());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Liveness(rs.getString(1), rs.getObject(2, OffsetDateTime.class).toInstant());
            }
        }
    }

    public boolean messageExists(Connection c, MessageId message) throws SQLException {
        try (PreparedStatement ps = c
                .prepareStatement(schema.sql("SELECT 1 FROM {schema}.message WHERE id = ?"))) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /** The status of every run of a message. */
    public List<RunStatus> runStatuses(Connection c, MessageId message) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(runStatusesSql)) {
            ps.setObject(1, message.value());
            List<RunStatus> statuses = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    statuses.add(RunStatus.valueOf(rs.getString(1)));
                }
            }
            return statuses;
        }
    }

    /** The events of the hierarchy a message belongs to, from its EMITTED on, in the order they were written. */
    /** The events of the hierarchy below {@code message} with an id above {@code afterId}, at most {@code limit}. */
    public List<Event> events(Connection c, MessageId message, long afterId, long limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(eventsSql)) {
            for (int i = 1; i <= 4; i++) {
                ps.setObject(i, message.value());
            }
            ps.setLong(5, afterId);
            ps.setLong(6, limit);
            return readEvents(ps);
        }
    }

    public static List<Event> readEvents(PreparedStatement ps) throws SQLException {
        List<Event> events = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                events.add(new Event(rs.getLong("id"), new MessageId(rs.getObject("message_id", UUID.class)),
                        EventType.valueOf(rs.getString("type")), rs.getString("saga"), rs.getString("engine"),
                        rs.getString("step"), new Lineage(Arrays.asList((UUID[]) rs.getArray("lineage").getArray())),
                        rs.getObject("created_at", OffsetDateTime.class),
                        rs.getObject("started_at", OffsetDateTime.class), rs.getString("exception"),
                        rs.getString("context"), rs.getObject("attempt", Integer.class)));
            }
        }
        return events;
    }
}
