package dev.coop.internal.operate;

import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * A scope's cancellation on Citus (docs/guide/citus.md, "Operators and clients on Citus"): what
 * {@link Operations#REQUEST_CANCELLATION} does in one statement, as statements of the caller's transaction that each
 * name the hierarchy's root (bound), so that Citus routes each to the hierarchy's shard. Citus refuses a
 * {@code FOR UPDATE} that reads more than one shard, and the one statement with the root bound is refused at
 * execution: Citus writes the locking CTE's rows as a binary intermediate result and reads them back as text
 * ({@code invalid input syntax for type uuid: "PGCOPY"}, Citus 13.2). The steps are the same: the request and its
 * event (nothing else when the scope was cancelled before), the runs it reaches, the due ones locked with
 * {@code SKIP LOCKED} (a step may run on them), and the wake of the others and of the due ones locked, which waits
 * for their locks ({@link Operations#waitForLocksAtMost}) and re-checks them as locked. The wake-up is a
 * {@code pg_notify} on the coordinator, where listeners are. Plain PostgreSQL never gets here.
 */
final class RootCancellation {
    /** The request and its event. Parameters: scope, lineage, failure, root; message, lineage, failure, root. */
    private static final String REQUEST = """
            WITH requested AS (
              INSERT INTO {schema}.cancellation (scope_id, lineage, failure, root_id)
              VALUES (?::uuid, ?::uuid[], ?::jsonb, ?::uuid)
              ON CONFLICT (scope_id) DO NOTHING
              RETURNING scope_id
            ), logged AS (
              INSERT INTO {schema}.event (message_id, type, lineage, exception, root_id)
              SELECT ?::uuid, 'CANCELLATION_REQUESTED', ?::uuid[], ?::jsonb, ?::uuid FROM requested
            )
            SELECT count(*) FROM requested
            """;
    /** The runs the scope's cancellation reaches, and which are due. Parameters: {now}, root, lineage x3. */
    private static final String REACHED = """
            SELECT id, status = 'RUNNABLE' AND runnable_at <= {now} AS due FROM {schema}.run
             WHERE root_id = ?
               AND (status IN ('RUNNABLE', 'PARKED', 'HELD') OR (status = 'WAITING' AND phase = 'HAPPY'))
               AND lineage[1:cardinality(?::uuid[])] = ?::uuid[]
               AND coalesce(cancel_from, 1) <= cardinality(?::uuid[])
            """;
    /** The due runs no step holds. Parameters: root, ids. */
    private static final String LOCK_DUE = """
            SELECT id FROM {schema}.run WHERE root_id = ? AND id = ANY(?::uuid[]) FOR UPDATE SKIP LOCKED
            """;
    /** The wake, as locked. Parameters: {now}, root, ids. */
    private static final String WAKE = """
            UPDATE {schema}.run SET status = 'RUNNABLE', runnable_at = {now}
             WHERE root_id = ? AND id = ANY(?::uuid[])
               AND (status IN ('RUNNABLE', 'PARKED', 'HELD') OR (status = 'WAITING' AND phase = 'HAPPY'))
            RETURNING saga
            """;
    /** One notification per saga woken, on the coordinator (a statement without a table). */
    private static final String NOTIFY = "SELECT count(pg_notify(?, s)) FROM unnest(?::text[]) s";

    private final SchemaName schema;
    private final Time time;

    RootCancellation(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    /** Requests the cancellation of the scope {@code lineage} (its last id) of {@code message}; false if done before. */
    boolean request(Connection c, UUID message, UUID[] lineage, String failure) throws SQLException {
        UUID root = lineage[0];
        var array = c.createArrayOf("uuid", lineage);
        try (PreparedStatement ps = c.prepareStatement(schema.sql(REQUEST))) {
            ps.setObject(1, lineage[lineage.length - 1]);
            ps.setArray(2, array);
            ps.setString(3, failure);
            ps.setObject(4, root);
            ps.setObject(5, message);
            ps.setArray(6, array);
            ps.setString(7, failure);
            ps.setObject(8, root);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (rs.getLong(1) == 0) {
                    return false;
                }
            }
        }
        List<UUID> due = new ArrayList<>();
        List<UUID> woken = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(REACHED))) {
            ps.setObject(1, time.bind());
            ps.setObject(2, root);
            ps.setArray(3, array);
            ps.setArray(4, array);
            ps.setArray(5, array);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    (rs.getBoolean(2) ? due : woken).add(rs.getObject(1, UUID.class));
                }
            }
        }
        if (!due.isEmpty()) {
            try (PreparedStatement ps = c.prepareStatement(schema.sql(LOCK_DUE))) {
                ps.setObject(1, root);
                ps.setArray(2, c.createArrayOf("uuid", due.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        woken.add(rs.getObject(1, UUID.class));
                    }
                }
            }
        }
        if (!woken.isEmpty()) {
            wake(c, root, woken);
        }
        return true;
    }

    private void wake(Connection c, UUID root, List<UUID> runs) throws SQLException {
        Set<String> sagas = new LinkedHashSet<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(WAKE))) {
            ps.setObject(1, time.bind());
            ps.setObject(2, root);
            ps.setArray(3, c.createArrayOf("uuid", runs.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    sagas.add(rs.getString(1));
                }
            }
        }
        if (!sagas.isEmpty()) {
            try (PreparedStatement ps = c.prepareStatement(NOTIFY)) {
                ps.setString(1, schema.channel());
                ps.setArray(2, c.createArrayOf("text", sagas.toArray()));
                ps.executeQuery().close();
            }
        }
    }
}
