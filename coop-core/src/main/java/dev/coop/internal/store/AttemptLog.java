package dev.coop.internal.store;

import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * A run's attempts in the log: each failed attempt of a step that its retry policy runs again ({@code ATTEMPT_FAILED},
 * with its failure and cause chain), and the run's parking ({@code PARKED}, why). Written in the transaction that
 * records the failure, never on the happy path. Bounded and append-only: a step's first {@link #KEPT_FIRST} failed
 * attempts get an event each; later failed attempts get none (the run row keeps the latest failure, as it must for
 * the retry); when the step's series ends (it commits, is parked, or its run rolls back) one more
 * {@code ATTEMPT_FAILED} event holds the last retried attempt in full, its {@code attempt} saying how many there were
 * (the ones between are counted, not kept). A step retried 10,000 times thus leaves {@code KEPT_FIRST + 1} such
 * events, and no event is ever rewritten.
 */
public final class AttemptLog {
    /** Failed attempts of a step kept whole, each as it happens. */
    public static final int KEPT_FIRST = 3;

    private static final String FAILED = """
            INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at, attempt,
                                        created_at, root_id)
            VALUES (?, 'ATTEMPT_FAILED', ?, ?, ?, ?, ?::jsonb, ?, ?, {now}, ?::uuid)
            """;

    /** The last retried attempt of a series past the kept ones: its failure is the one the run row holds. */
    private static final String SUMMARY = """
            INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, attempt, created_at,
                                        root_id)
            SELECT message_id, 'ATTEMPT_FAILED', saga, ?, ?, lineage, failure, ?, {now}, root_id
              FROM {schema}.run WHERE root_id = ? AND id = ? AND failure->>'type' <> 'dev.coop.DatabaseTrouble' -- a step's failure
            """;

    /**
     * The PARKED event, and the parking counted in {@code run_count} (counts over time, schema version 27: parkings
     * are the one count a read cannot derive from the run row, and they are off the step's path), in the database's
     * minute and the writing backend's shard (see {@code V22__run_counts.sql}).
     */
    private static final String PARKED = """
            WITH parked AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at, attempt,
                                          created_at, root_id)
              VALUES (?, 'PARKED', ?, ?, ?, ?, ?::jsonb, ?, ?, {now}, ?::uuid)
              RETURNING saga
            )
            INSERT INTO {schema}.run_count AS c (minute, saga, shard, parked)
            SELECT date_trunc('minute', clock_timestamp()), saga, pg_backend_pid(), 1 FROM parked
             WHERE left(saga, 1) <> '~'
            ON CONFLICT (minute, saga, shard) DO UPDATE SET parked = c.parked + 1
            """;

    private final SchemaName schema;
    private final Time time;

    public AttemptLog(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    /** The failed attempt {@code attempt} of {@code step}, which its retry policy runs again: kept if among the first. */
    public void failed(Connection c, ClaimedRun run, String engine, String step, int attempt, String failure)
            throws SQLException {
        if (attempt > KEPT_FIRST) {
            return; // counted by the attempt numbers; the last one is written when the series ends (ended)
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(FAILED))) {
            bindEvent(ps, 0, run, engine, step, failure, attempt);
            ps.executeUpdate();
        }
    }

    /**
     * The series of attempts of {@code step} ends now (the step committed, or its run rolls back), at attempt
     * {@code run.attempt()}: when attempts went unwritten, the last retried one is appended, in full. Nothing to do
     * (no statement) for a step that failed at most {@link #KEPT_FIRST} times before.
     */
    public void ended(Connection c, ClaimedRun run, String engine, String step) throws SQLException {
        if (run.attempt() - 1 <= KEPT_FIRST) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(SUMMARY))) {
            int i = 0;
            ps.setString(++i, engine);
            ps.setString(++i, step);
            ps.setInt(++i, run.attempt() - 1);
            ps.setObject(++i, time.bind());
            ps.setObject(++i, run.rootId());
            ps.setObject(++i, run.id());
            ps.executeUpdate();
        }
    }

    /** The run stopped at {@code step} for an operator, after attempt {@code attempt}, because of {@code why}. */
    public void parked(Connection c, ClaimedRun run, String engine, String step, int attempt, String why)
            throws SQLException {
        ended(c, run, engine, step);
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
        ps.setObject(++i, run.rootId());
        return i;
    }
}
