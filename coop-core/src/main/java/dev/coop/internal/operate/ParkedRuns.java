package dev.coop.internal.operate;

import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.failure.Failure;
import dev.coop.inspect.ParkedRun;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;
import dev.coop.internal.store.Wakes;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/**
 * Parked runs (a step that failed every attempt): listed oldest first, and resolved by an operator: retried from
 * attempt 1, or their step marked done. Each method runs inside the caller's transaction.
 */
public final class ParkedRuns {
    private final SchemaName schema;
    private final Time time;

    public ParkedRuns(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    /** Parked runs, oldest first. */
    public List<ParkedRun> list(Connection c, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema
                .sql("""
                        SELECT r.id, r.message_id, r.saga, r.lineage, r.step_index, r.attempt, r.failure::text, r.created_at,
                               coalesce(r.next_step, (SELECT v.first_step FROM {schema}.saga_version v -- before its first advance
                                                       WHERE r.step_index = 0 AND v.saga = r.saga AND v.version = r.saga_version))
                          FROM {schema}.run r WHERE r.status = 'PARKED' ORDER BY r.created_at LIMIT ?
                        """))) {
            ps.setInt(1, limit);
            List<ParkedRun> runs = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String failure = rs.getString(7);
                    runs.add(new ParkedRun(rs.getObject(1, UUID.class), new MessageId(rs.getObject(2, UUID.class)),
                            rs.getString(3), new Lineage(Arrays.asList((UUID[]) rs.getArray(4).getArray())),
                            rs.getInt(5), rs.getInt(6),
                            failure == null ? null : Failure.fromJson(failure),
                            rs.getObject(8, OffsetDateTime.class), rs.getString(9)));
                }
            }
            return runs;
        }
    }

    /**
     * Makes a parked run runnable again: retry its step from attempt 1, or (skip) treat it as done; the log gets a
     * {@code RETRIED} or {@code MARKED_DONE} event naming the step (who and why are in the audit).
     */
    public boolean resolve(Connection c, UUID runId, boolean skip) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH resolved AS (
                  UPDATE {schema}.run SET status = 'RUNNABLE', attempt = 1, resolution = ?,
                         runnable_at = {now}, version = version + 1
                   WHERE id = ? AND status = 'PARKED'
                  RETURNING message_id, saga, saga_version, status, runnable_at, lineage, next_step, root_id
                ), {notified}, logged AS (
                  INSERT INTO {schema}.event (message_id, type, saga, step, lineage, created_at, root_id)
                  SELECT message_id, ?, saga, next_step, lineage, {now}, root_id FROM resolved
                )
                SELECT count(*)::int FROM resolved, notified
                """.replace("{notified}", Wakes.notifying("notified", "resolved", Wakes.NONE_LOCAL))))) {
            ps.setString(1, skip ? "SKIP" : null);
            ps.setObject(2, time.bind());
            ps.setObject(3, runId);
            ps.setString(4, skip ? "MARKED_DONE" : "RETRIED");
            ps.setObject(5, time.bind());
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getInt(1) > 0;
            }
        }
    }
}
