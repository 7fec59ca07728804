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
 * Counts over time: the {@code run_count} rollup that two triggers on {@code run} keep (schema version 22), per saga
 * and minute of the database's clock, in shards that a read adds up. Reading the last hours is a range scan of its
 * primary key; the log is never read. Retention deletes minutes older than its cutoff ({@link #PRUNE}).
 */
public final class RunCountRollup {
    /** The longest window a read covers. */
    public static final Duration MAX_WINDOW = Duration.ofDays(7);

    private static final String READ = """
            SELECT saga, minute, sum(launched), sum(committed), sum(rolled_back), sum(rollback_failed), sum(parked)
              FROM {schema}.run_count
             WHERE minute >= date_trunc('minute', clock_timestamp() - make_interval(secs => ?::float8))
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
