package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.UUID;

/**
 * Ordering keys (schema version 10), held and released by the statements of keyed runs only (version 27; triggers on
 * {@code run} did it for every run before). The runs of one saga whose messages carry the same key run one at a
 * time, in launch order: a launch with keys takes the (saga, key) locks first ({@link #lockForLaunch}), then its
 * insert ({@link EmitSql#EMIT_KEYED}, a statement that starts after the locks, so it sees every release committed
 * before them) creates a run HELD when its key has an unfinished run of its saga; the transaction that finishes a
 * keyed run releases the key's next HELD run ({@link #releaseAfter}) under the same lock. Parents committed by their
 * last child and children settled unstarted release in the statement that finishes them ({@link #RELEASE_AFTER}).
 *
 * <p>On Citus (schema version 31) the runs of a key are on many shards, so its turns are the coordinator's {@code
 * key_turn} ({@link CitusKeys}): the launch writes its runs, then takes their turns ({@link #takeTurns}), and the same
 * calls of {@code release_ordering_key_after} release the next turn there, by the run's root and id.
 */
final class KeyedRuns {
    /**
     * The release after runs finished in the calling statement: an SQL expression of {@code saga}, {@code key} and
     * the ids of those runs ({@code release_ordering_key_after}, which counts them as finished).
     */
    static final String RELEASE_AFTER = "{schema}.release_ordering_key_after(%s, %s, %s)";

    private final String lockSql;
    private final String releaseHeldSql;
    private final String releaseSql;
    private final String takeTurnsSql;

    KeyedRuns(SchemaName schema) {
        this.lockSql = schema.sql("SELECT {schema}.lock_launch_keys(?::text[], ?::text[])");
        // a launch that held a run behind nothing active (HELD rows left by hand) releases the oldest, as before
        this.releaseHeldSql = schema.sql("""
                SELECT count(*) FROM (SELECT DISTINCT saga, ordering_key FROM {schema}.run
                                       WHERE message_id = ANY(?::uuid[]) AND status = 'HELD') h
                 WHERE {schema}.release_ordering_key_after(h.saga, h.ordering_key, '{}')
                """);
        this.releaseSql = schema.sql("SELECT {schema}.release_ordering_key_after(?, ?, '{}')");
        this.takeTurnsSql = schema.sql("SELECT {schema}.take_key_turns(?::uuid[], ?::uuid[], ?::uuid[])");
    }

    static boolean keyed(List<Emission> emissions) {
        return emissions.stream().anyMatch(e -> e.orderingKey() != null);
    }

    /**
     * Takes the locks of the keys {@code emissions} carry, one per saga registered for the topic (SQLSTATE CP003 when
     * the transaction is not READ COMMITTED).
     */
    void lockForLaunch(Connection c, List<Emission> emissions) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(lockSql)) {
            ps.setArray(1, c.createArrayOf("text", emissions.stream().map(Emission::topic).toArray()));
            ps.setArray(2, c.createArrayOf("text", emissions.stream().map(Emission::orderingKey).toArray()));
            ps.executeQuery().close();
        }
    }

    /** After a keyed launch: releases the oldest HELD run of a key the launch held a run of, if none is active. */
    void releaseHeld(Connection c, List<Emission> emissions) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseHeldSql)) {
            ps.setArray(1, c.createArrayOf("uuid", emissions.stream()
                    .filter(e -> e.orderingKey() != null).map(Emission::messageId).toArray(UUID[]::new)));
            ps.executeQuery().close();
        }
    }

    /**
     * On Citus, after a keyed launch's insert wrote its runs RUNNABLE: their turns in the coordinator's {@code
     * key_turn} ({@link CitusKeys#TAKE}), the runs behind a turn made HELD by their root.
     */
    void takeTurns(Connection c, Emits.Origin origin, List<Emission> emissions) throws SQLException {
        List<Emission> keyed = emissions.stream().filter(e -> e.orderingKey() != null).toList();
        try (PreparedStatement ps = c.prepareStatement(takeTurnsSql)) {
            ps.setArray(1, c.createArrayOf("uuid", keyed.stream().map(e -> origin.root(e.messageId())).toArray()));
            ps.setArray(2, c.createArrayOf("uuid", keyed.stream().map(Emission::messageId).toArray()));
            if (origin.scope() == null) {
                ps.setNull(3, java.sql.Types.ARRAY);
            } else {
                ps.setArray(3, c.createArrayOf("uuid", origin.scope()));
            }
            ps.executeQuery().close();
        }
    }

    /** After the statement that finished keyed run {@code run}: releases its key's next HELD run, if any. */
    void releaseAfter(Connection c, ClaimedRun run) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseSql)) {
            ps.setString(1, run.saga());
            ps.setString(2, run.orderingKey());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
            }
        }
    }
}
