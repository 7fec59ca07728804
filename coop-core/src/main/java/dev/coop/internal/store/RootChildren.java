package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * What a parent does to its unstarted children on Citus ({@link SchemaName#citus()}). Citus refuses
 * {@link ChildSql#DETACH_UNSTARTED} and {@link ChildSql#SETTLE_UNSTARTED} (a {@code FOR UPDATE} by {@code parent_id},
 * which reads every shard). A parent's children are in its hierarchy, so here each statement binds the parent's root
 * ({@code root_id = ?} on every {@code run} it names: one shard). The settlement's one statement also writes the
 * coordinator's {@code external_task} and takes its events' ids from a CTE; here it is split: the runs settled (one
 * shard), their events from bound values (ids from the coordinator's sequence, in order), the tasks among them (on
 * the coordinator), the parent's count (one shard) and the keys released, in the one statement's order.
 */
final class RootChildren {
    /** {@link ChildSql#DETACH_UNSTARTED} with the root bound in its lock and its update. */
    static final String DETACH_UNSTARTED = CitusLayout.rewritten(ChildSql.DETACH_UNSTARTED,
            "WHERE parent_id = ?", "WHERE root_id = ? AND parent_id = ?",
            "FROM d WHERE r.id = d.id", "FROM d WHERE r.root_id = ? AND r.id = d.id");

    /** The unstarted awaited runs of a step instance, settled (one shard), in id order. */
    static final String SETTLE = """
            WITH d AS (
              SELECT id FROM {schema}.run
               WHERE root_id = ? AND parent_id = ? AND parent_seq = ? AND started_at IS NULL
                 AND status IN ('RUNNABLE', 'PARKED', 'HELD', 'WAITING') AND awaited -- WAITING: an external task
               ORDER BY id
               FOR UPDATE SKIP LOCKED
            ), settled AS (
              UPDATE {schema}.run r
                 SET status = 'ROLLED_BACK', phase = 'ROLLBACK', failure = ?::jsonb, finished_at = {now},
                     version = r.version + 1
                FROM d WHERE r.root_id = ? AND r.id = d.id
              RETURNING r.id, r.message_id, r.saga, r.lineage, r.ordering_key
            )
            SELECT id, message_id, saga, lineage::text, ordering_key FROM settled ORDER BY id
            """;

    /**
     * Their events, ROLLING_BACK (with the reason) and ROLLED_BACK for each, in order, as {@code INSERT ... VALUES} of
     * bound rows ({@link #logged}): an {@code INSERT ... SELECT FROM unnest(...)} went through the coordinator, and a
     * parent's give-up committed in two phases.
     */
    private static final String LOGGED_INTO = """
            INSERT INTO {schema}.event (message_id, type, saga, engine, lineage, exception, root_id)
            VALUES %s
            """;

    /** One event of {@link #logged}: the message, the type, the saga, the engine, the lineage, the reason, the root. */
    private static final String LOGGED_ROW = "(?::uuid, ?, ?, ?, ?::uuid[], ?::jsonb, ?::uuid)";

    /** {@link #LOGGED_INTO} of two events for each of {@code runs} runs. */
    static String logged(int runs) {
        return LOGGED_INTO.formatted(String.join(",\n       ", java.util.Collections.nCopies(2 * runs, LOGGED_ROW)));
    }

    /** {@link #logged}: one run's two events (as audited). */
    static final String LOGGED = logged(1);

    /** The external tasks among them (on the coordinator): timed out when the reason is a deadline, else cancelled. */
    static final String TASKS = """
            UPDATE {schema}.external_task t
               SET state = CASE WHEN ?::jsonb #>> '{causes,0,type}' LIKE '%DeadlineMissedException'
                                THEN 'TIMED_OUT' ELSE 'CANCELLED' END,
                   settled_at = {now}, settled_by = 'coop'
             WHERE t.run_id = ANY(?::uuid[]) AND t.state = 'OPEN'
            """;

    /** They did not commit: failures of the parent's step, like any child that rolled back (one shard). */
    static final String COUNTED = """
            UPDATE {schema}.run p SET failed_children = p.failed_children + ? WHERE p.root_id = ? AND p.id = ?
            """;

    /** A key of a keyed run among them goes on (KeyedRuns, schema version 27). */
    static final String RELEASED = "SELECT {schema}.release_ordering_key_after(?, ?, ?::uuid[])";

    private final SchemaName schema;
    private final Time time;

    RootChildren(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    int detachUnstarted(Connection c, UUID rootId, UUID runId, int seq) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(DETACH_UNSTARTED))) {
            ps.setObject(1, rootId);
            ps.setObject(2, runId);
            ps.setInt(3, seq);
            ps.setObject(4, rootId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** As {@link ChildQueries#settleUnstarted}: the messages of the settled runs, one entry per run. */
    List<UUID> settleUnstarted(Connection c, UUID rootId, UUID runId, int seq, String failure, String engine)
            throws SQLException {
        List<UUID> ids = new ArrayList<>();
        List<UUID> messages = new ArrayList<>();
        List<String> sagas = new ArrayList<>();
        List<String> lineages = new ArrayList<>();
        Map<List<String>, List<UUID>> keyed = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(SETTLE))) {
            ps.setObject(1, rootId);
            ps.setObject(2, runId);
            ps.setInt(3, seq);
            ps.setString(4, failure);
            ps.setObject(5, time.bind());
            ps.setObject(6, rootId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getObject(1, UUID.class));
                    messages.add(rs.getObject(2, UUID.class));
                    sagas.add(rs.getString(3));
                    lineages.add(rs.getString(4));
                    if (rs.getString(5) != null) {
                        keyed.computeIfAbsent(List.of(rs.getString(3), rs.getString(5)), k -> new ArrayList<>());
                    }
                }
            }
        }
        if (ids.isEmpty()) {
            return messages;
        }
        log(c, rootId, engine, failure, messages, sagas, lineages);
        if (sagas.contains(dev.coop.ExternalTask.SAGA)) { // a write to external_task makes it two-phase
            settleTasks(c, failure, ids);
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(COUNTED))) {
            ps.setInt(1, ids.size());
            ps.setObject(2, rootId);
            ps.setObject(3, runId);
            ps.executeUpdate();
        }
        for (List<String> key : keyed.keySet()) {
            try (PreparedStatement ps = c.prepareStatement(schema.sql(RELEASED))) {
                ps.setString(1, key.get(0));
                ps.setString(2, key.get(1));
                ps.setArray(3, c.createArrayOf("uuid", ids.toArray()));
                ps.executeQuery().close();
            }
        }
        return messages;
    }

    /** {@link #TASKS} for the settled runs {@code ids}, some of them external tasks. */
    private void settleTasks(Connection c, String failure, List<UUID> ids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TASKS))) {
            ps.setString(1, failure);
            ps.setObject(2, time.bind());
            ps.setArray(3, c.createArrayOf("uuid", ids.toArray()));
            ps.executeUpdate();
        }
    }

    private void log(Connection c, UUID rootId, String engine, String failure, List<UUID> messages,
            List<String> sagas, List<String> lineages) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(logged(messages.size())))) {
            int i = 0;
            for (int k = 0; k < messages.size(); k++) {
                for (String type : new String[]{"ROLLING_BACK", "ROLLED_BACK"}) {
                    ps.setObject(++i, messages.get(k), Types.OTHER);
                    ps.setString(++i, type);
                    ps.setString(++i, sagas.get(k));
                    ps.setString(++i, engine);
                    ps.setString(++i, lineages.get(k)); // the lineage's text, as SETTLE returns it
                    ps.setString(++i, type.equals("ROLLING_BACK") ? failure : null);
                    ps.setObject(++i, rootId, Types.OTHER);
                }
            }
            ps.executeUpdate();
        }
    }
}
