package dev.coop.internal.read;

import dev.coop.internal.store.SchemaName;

import dev.coop.inspect.RunCount;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

/**
 * Counts over time, per saga and minute, read when asked rather than written on the step's path (schema version 27):
 * launches are a range of {@code run.created_at} (index {@code run_created}), final outcomes a range of {@code
 * run.finished_at} (index {@code run_finished}), and parkings, rare and on the failure path, rows of the {@code
 * run_count} table that the PARKED event's statement upserts ({@link dev.coop.internal.store.AttemptLog}), in shards
 * that a read adds up, as are the minutes counted there before version 27. Retention deletes the runs and the
 * {@code run_count} minutes older than its cutoff ({@link #PRUNE}). Runs of internal sagas ({@code ~external-task})
 * are not counted.
 */
public final class RunCountRollup {
    /** The longest window a read covers. */
    public static final Duration MAX_WINDOW = Duration.ofDays(7);

    private static final String READ = """
            WITH since AS MATERIALIZED (
              SELECT date_trunc('minute', clock_timestamp() - make_interval(secs => ?::float8)) AS minute
            ), counted AS (
              SELECT c.saga, c.minute, c.launched::bigint AS launched, c.committed::bigint AS committed,
                     c.rolled_back::bigint AS rolled_back, c.rollback_failed::bigint AS rollback_failed,
                     c.parked::bigint AS parked
                FROM {schema}.run_count c, since WHERE c.minute >= since.minute
              UNION ALL
              SELECT r.saga, date_trunc('minute', r.created_at), count(*), 0, 0, 0, 0
                FROM {schema}.run r, since
               WHERE r.created_at >= since.minute AND left(r.saga, 1) <> '~'
               GROUP BY 1, 2
              UNION ALL
              SELECT r.saga, date_trunc('minute', r.finished_at), 0, count(*) FILTER (WHERE r.status = 'COMMITTED'),
                     count(*) FILTER (WHERE r.status = 'ROLLED_BACK'),
                     count(*) FILTER (WHERE r.status = 'ROLLBACK_FAILED'), 0
                FROM {schema}.run r, since
               WHERE r.finished_at >= since.minute AND r.status IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED')
                 AND left(r.saga, 1) <> '~'
               GROUP BY 1, 2
            )
            SELECT saga, minute, sum(launched), sum(committed), sum(rolled_back), sum(rollback_failed), sum(parked)
              FROM counted
             GROUP BY minute, saga ORDER BY minute, saga
            """;
    /** The minutes before a cutoff (one parameter). */
    public static final String PRUNE = "DELETE FROM {schema}.run_count WHERE minute < date_trunc('minute', ?::timestamptz)";

    private final SchemaName schema;

    public RunCountRollup(SchemaName schema) {
        this.schema = schema;
    }

    /** Per saga and minute, oldest minute first, for the minutes that began at most {@code window} ago. */
    public List<RunCount> read(Connection c, Duration window) throws SQLException {
        List<RunCount> counts = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql(READ))) {
            ps.setLong(1, window.toSeconds());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.add(new RunCount(rs.getString(1), rs.getObject(2, OffsetDateTime.class).toInstant(),
                            rs.getLong(3), rs.getLong(4),
                            rs.getLong(5), rs.getLong(6), rs.getLong(7)));
                }
            }
        }
        return counts;
    }
}
