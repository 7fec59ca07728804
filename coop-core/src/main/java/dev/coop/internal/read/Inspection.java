package dev.coop.internal.read;

import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.RunView;
import dev.coop.internal.store.SagaLimits;
import dev.coop.internal.store.SchemaName;
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
 * Reads cooperation trees: the run table for state, the event log for what happened ({@link TreeReader} reads them
 * within bounds, {@link TreeAssembly} builds the views), and what the runnable runs wait for right now.
 */
public final class Inspection {
    /** A tree this small (runs) is read whole, as long as its hierarchy's log is small too. */
    static final int SMALL_TREE = 5_000;
    /** Events of a hierarchy read whole through its root; a larger log is read only for the runs loaded. */
    static final int SMALL_LOG = 20_000;
    /** A run with more child runs than this has them counted, listing only those that did not commit. */
    public static final int COLLAPSE_OVER = 100;
    /** Of a collapsed run's children, how many that did not commit are listed (oldest first). */
    public static final int LISTED_MAX = 100;
    /** Runs a bounded read loads at most; past it, every further parent is collapsed. */
    static final int MAX_LOADED = 10_000;

    private final SchemaName schema;
    private final TreeReader reader;

    public Inspection(SchemaName schema) {
        this.schema = schema;
        this.reader = new TreeReader(schema);
    }

    /** The tree below a message. */
    public Hierarchy hierarchy(Connection c, MessageId message) throws SQLException {
        String topic;
        OffsetDateTime launched;
        UUID[] scope;
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT m.topic, m.created_at, e.lineage FROM {schema}.message m
                  JOIN {schema}.event e ON e.root_id = m.root_id AND e.message_id = m.id AND e.type = 'EMITTED'
                 WHERE m.id = ?
                """))) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new CoopValidationException("No message " + message + " in schema '" + schema.value() + "'");
                }
                topic = rs.getString(1);
                launched = rs.getObject(2, OffsetDateTime.class);
                scope = (UUID[]) rs.getArray(3).getArray();
            }
        }
        LoadedTree read = reader.load(c, "r.message_id = ?", message.value(), scope);
        return new Hierarchy(message, topic, launched,
                TreeAssembly.assemble(read, waitingFor(c, read.rows()), running(c, read.rows()),
                        new TaskStories(schema).read(c, read.rows())));
    }

    /** The tree below one run. */
    public RunView run(Connection c, Lineage lineage) throws SQLException {
        List<TreeRow> anchor = reader.rows(c, "r.id = ?", lineage.last(), null); // its root is not known yet
        if (anchor.isEmpty()) {
            throw new CoopValidationException("No run with lineage " + lineage + " in schema '" + schema.value() + "'");
        }
        if (lineage.depth() > 1) { // a lineage of one element names the run by its id alone
            StoredLineage.require(lineage, anchor.getFirst().lineage());
        }
        UUID[] scope = anchor.getFirst().lineage();
        LoadedTree read = reader.load(c, "r.id = ?", lineage.last(), scope);
        return TreeAssembly.assemble(read, waitingFor(c, read.rows()), running(c, read.rows()),
                new TaskStories(schema).read(c, read.rows())).getFirst();
    }

    /**
     * Why the tree's runnable runs wait, when their saga's limits hold them back: read only when the tree has
     * runnable runs of limited sagas (two statements: the sagas' states, from {@code pg_locks} and the rate window,
     * and which of those runs are due and not locked by a step transaction right now). On Citus the slots are the
     * coordinator's advisory locks (the claim's gate takes them there), so the states read the same; a run's row lock
     * is a worker's transaction, so the second statement is routed by the tree's root and asks that worker's
     * {@code pg_locks} ({@code xact_running}, {@link dev.coop.internal.store.CitusLayout#XACT_RUNNING_SIGNATURE}).
     */
    private Map<UUID, String> waitingFor(Connection c, List<TreeRow> rows) throws SQLException {
        List<TreeRow> runnable = rows.stream().filter(r -> r.status() == RunStatus.RUNNABLE).toList();
        if (runnable.isEmpty()) {
            return Map.of();
        }
        Map<String, SagaLimits.State> states = new SagaLimits(schema).states(c,
                runnable.stream().map(TreeRow::saga).distinct().toList(), null);
        List<TreeRow> held = runnable.stream().filter(r -> states.containsKey(r.saga())
                && states.get(r.saga()).reason() != null).toList();
        if (held.isEmpty()) {
            return Map.of();
        }
        Map<UUID, String> reasons = new HashMap<>();
        Map<UUID, List<UUID>> byRoot = schema.citus()
                ? held.stream().collect(java.util.stream.Collectors.groupingBy(r -> r.lineage()[0],
                        java.util.stream.Collectors.mapping(TreeRow::id, java.util.stream.Collectors.toList())))
                : java.util.Collections.singletonMap(null, held.stream().map(TreeRow::id).toList());
        for (Map.Entry<UUID, List<UUID>> root : byRoot.entrySet()) {
            try (PreparedStatement ps = c.prepareStatement(schema.sql(schema.citus() ? DUE_BY_ROOT : DUE))) {
                int i = 0;
                if (schema.citus()) {
                    ps.setObject(++i, root.getKey());
                }
                ps.setArray(++i, c.createArrayOf("uuid", root.getValue().toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        reasons.put(rs.getObject(1, UUID.class), states.get(rs.getString(2)).reason());
                    }
                }
            }
        }
        return reasons;
    }

    /** Which of the runs are due and not held by a step's transaction (its row lock: {@code xmax}). */
    static final String DUE = """
            SELECT r.id, r.saga FROM {schema}.run r
             WHERE r.id = ANY(?) AND r.status = 'RUNNABLE' AND r.runnable_at <= clock_timestamp()
               AND NOT EXISTS (SELECT 1 FROM pg_locks l -- a step transaction holds the row: running
                                WHERE l.locktype = 'transactionid' AND l.transactionid = r.xmax)
            """;

    /** {@link #DUE} on Citus: by the tree's root (one shard), the lock asked of the worker's {@code pg_locks}. */
    static final String DUE_BY_ROOT = """
            SELECT r.id, r.saga FROM {schema}.run r
             WHERE r.root_id = ? AND r.id = ANY(?) AND r.status = 'RUNNABLE' AND r.runnable_at <= clock_timestamp()
               AND NOT {schema}.xact_running(r.xmax)
            """;

    /** The steps engines execute right now in the tree's runnable runs ({@link RunningSteps}). */
    private Map<UUID, RunningSteps.Live> running(Connection c, List<TreeRow> rows) throws SQLException {
        return new RunningSteps(schema).read(c,
                rows.stream().filter(r -> r.status() == RunStatus.RUNNABLE).map(TreeRow::id).toList());
    }

    /**
     * The status readers show for the run aliased {@code alias}: a RUNNABLE run that still awaits children (it is
     * due early, at a barrier timer or its deadline) is WAITING.
     */
    static String shownStatus(String alias) {
        return ("CASE WHEN %1$s.status = 'RUNNABLE' AND %1$s.pending_children > 0 THEN 'WAITING' ELSE %1$s.status END")
                .formatted(alias);
    }
}
