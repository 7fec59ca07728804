package dev.coop.internal.step;

import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.OffsetDateTime;

/**
 * A run's attempts in the log: each failed attempt of a step that its retry policy runs again ({@code ATTEMPT_FAILED},
 * with its failure and cause chain), and the run's parking ({@code PARKED}, why). Written in the transaction that
 * records the failure, never on the happy path. Bounded: a step's first {@link #KEPT_FIRST} failed attempts are kept
 * whole, and one more event holds the latest attempt, rewritten by each later one (its {@code attempt} says how many
 * there were), so a step retried 10,000 times leaves {@code KEPT_FIRST + 1} events.
 */
public final class AttemptLog {
    /** Failed attempts of a step kept whole, before the one event that the later attempts rewrite. */
    static final int KEPT_FIRST = 3;

    private static final String FAILED = """
            WITH tail AS ( -- past the kept attempts: the newest ATTEMPT_FAILED of the run is this series' latest
              SELECT id FROM {schema}.event
               WHERE ?::int > %d AND message_id = ? AND saga = ? AND type = 'ATTEMPT_FAILED'
               ORDER BY id DESC LIMIT 1
            ), rewritten AS (
              UPDATE {schema}.event e
                 SET exception = ?::jsonb, attempt = ?, engine = ?, step = ?, started_at = ?, created_at = {now}
                FROM tail WHERE e.id = tail.id
              RETURNING e.id
            )
            INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at, attempt,
                                        created_at)
            SELECT ?, 'ATTEMPT_FAILED', ?, ?, ?, ?, ?::jsonb, ?, ?, {now}
             WHERE NOT EXISTS (SELECT 1 FROM rewritten)
            """.formatted(KEPT_FIRST + 1);

    private static final String PARKED = """
            INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at, attempt,
                                        created_at)
            VALUES (?, 'PARKED', ?, ?, ?, ?, ?::jsonb, ?, ?, {now})
            """;

    private final SchemaName schema;
    private final Time time;

    public AttemptLog(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    /** The failed attempt {@code attempt} of {@code step}, which its retry policy runs again. */
    void failed(Connection c, ClaimedRun run, String engine, String step, int attempt, String failure)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(FAILED))) {
            int i = 0;
            ps.setInt(++i, attempt);
            ps.setObject(++i, run.messageId());
            ps.setString(++i, run.saga());
            ps.setString(++i, failure);
            ps.setInt(++i, attempt);
            ps.setString(++i, engine);
            ps.setString(++i, step);
            ps.setObject(++i, run.claimedAt());
            ps.setObject(++i, time.bind());
            i = bindEvent(ps, i, run, engine, step, failure, attempt);
            ps.executeUpdate();
        }
    }

    /** The run stopped at {@code step} for an operator, after attempt {@code attempt}, because of {@code why}. */
    void parked(Connection c, ClaimedRun run, String engine, String step, int attempt, String why)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(PARKED))) {
            bindEvent(ps, 0, run, engine, step, why, attempt);
            ps.executeUpdate();
        }
    }

    private int bindEvent(PreparedStatement ps, int i, ClaimedRun run, String engine, String step, String failure,
            int attempt) throws SQLException {
        ps.setObject(++i, run.messageId());
        ps.setString(++i, run.saga());
        ps.setString(++i, engine);
        ps.setString(++i, step);
        ps.setArray(++i, ps.getConnection().createArrayOf("uuid", run.lineage()));
        ps.setString(++i, failure);
        ps.setObject(++i, run.claimedAt());
        ps.setInt(++i, attempt);
        ps.setObject(++i, time.bind());
        return i;
    }
}
