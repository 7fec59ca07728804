package dev.coop.internal.store;

import dev.coop.RunStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The deferred advances of a round (runs of one saga that stay runnable now or finished) in one statement
 * ({@link RoundAdvanceSql}): one insert of all their events (each run's first one carrying its executed step instance),
 * one update of the runs that stay runnable, one of the runs that finished, and, when finished runs count off at their
 * parents, one update of those parents. Each run's part is what its own advance ({@link AdvanceSql#ADVANCE_ALONE};
 * quiet for a run that stays runnable) writes, each parent's what its children's count-offs would write one after
 * another; only the per-statement cost is paid once instead of once a run. Arrays travel as one parameter per column;
 * a run's own arrays (lineage, iterations) as text literals, cast back by the statement.
 */
final class RoundAdvances {
    private final String sql;
    private final String commitSql;
    private final String joinCheckSql;
    private final String countingOffSql;
    private final Time time;
    private final String localSagas;
    private final KeyedRuns keys;
    private final String joinCheckAloneSql;

    RoundAdvances(SchemaName schema, Time time, String localSagas) {
        this.keys = new KeyedRuns(schema);
        this.joinCheckAloneSql = schema.sql(Advances.JOIN_CHECK);
        this.sql = schema.sql(RoundAdvanceSql.SQL);
        this.commitSql = sql + ";\nCOMMIT";
        this.joinCheckSql = sql + ";\n" + schema.sql(Advances.JOIN_CHECK); // then the join check and COMMIT
        this.countingOffSql = schema.sql(RoundAdvanceSql.COUNTING_OFF);
        this.time = time;
        this.localSagas = localSagas;
    }

    /**
     * Writes {@code moves} (advances of runs of {@code saga} without a parent to count off, each staying runnable now
     * or finishing) and with {@code commit} the COMMIT, in one round trip. When runs finished (their messages in
     * {@code finished}), the COMMIT waits for the check that none of those messages is a pending join member.
     *
     * @return false when such a membership is pending: the transaction is open, the advances written, for the caller
     *         to settle the memberships and commit; true otherwise
     */
    boolean write(Connection c, String saga, String engine, List<Store.Move> moves, boolean commit,
            List<UUID> finished) throws SQLException {
        RoundColumns columns = columns(saga, moves);
        if (columns.countsOff()) {
            throw new IllegalArgumentException("advances that count off are written with writeCountingOff");
        }
        List<ClaimedRun> keyed = finishedKeyed(moves);
        if (!keyed.isEmpty()) { // their keys' next runs are released before the COMMIT: round trips of their own
            write(c, columns, saga, engine, false, false, finished);
            for (ClaimedRun run : keyed) {
                keys.releaseAfter(c, run);
            }
            if (!commit) {
                return true;
            }
            try (PreparedStatement ps = c.prepareStatement(finished.isEmpty() ? "COMMIT" : joinCheckAloneSql)) {
                if (finished.isEmpty()) {
                    ps.execute();
                    return true;
                }
                ps.setArray(1, c.createArrayOf("uuid", finished.toArray()));
                return Advances.committedUnlessJoined(ps);
            }
        }
        return write(c, columns, saga, engine, commit, commit && !finished.isEmpty(), finished);
    }

    private boolean write(Connection c, RoundColumns columns, String saga, String engine, boolean commit,
            boolean checkJoins, List<UUID> finished) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(checkJoins ? joinCheckSql : commit ? commitSql : sql)) {
            int i = bindAdvances(ps, columns, saga, engine);
            if (checkJoins) {
                ps.setArray(++i, c.createArrayOf("uuid", finished.toArray()));
                return Advances.committedUnlessJoined(ps);
            }
            Advances.executeAll(ps); // a failure (a cancellation, a lost claim, the database): the caller rolls back
            return true;
        }
    }

    /** The keyed runs among {@code moves} that finish (schema version 27: {@link KeyedRuns}). */
    private static List<ClaimedRun> finishedKeyed(List<Store.Move> moves) {
        return moves.stream().filter(m -> m.run().orderingKey() != null && m.next().status().isFinished())
                .map(Store.Move::run).toList();
    }

    /**
     * Writes {@code moves} (as {@link #write}, some of them finishing runs that count off at their parents) and the
     * count-offs, one per parent, without committing. A failure (a cancellation, a lost claim, the database) leaves
     * the transaction to be rolled back.
     *
     * @return each parent counted off, as the count-off left it (committed here: count it off at its own parent in
     *         turn)
     */
    List<CountedOff> writeCountingOff(Connection c, String saga, String engine, List<Store.Move> moves)
            throws SQLException {
        RoundColumns columns = columns(saga, moves);
        List<CountedOff> parents = countOff(c, columns, saga, engine);
        for (ClaimedRun run : finishedKeyed(moves)) {
            keys.releaseAfter(c, run);
        }
        return parents;
    }

    private List<CountedOff> countOff(Connection c, RoundColumns columns, String saga, String engine)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(countingOffSql)) {
            int i = bindAdvances(ps, columns, saga, engine);
            ps.setString(++i, engine); // of a parent's COMMITTED
            List<CountedOff> parents = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    parents.add(new CountedOff(new Counted(rs.getObject(1, UUID.class), rs.getString(2),
                            RunStatus.valueOf(rs.getString(3)), rs.getObject(4, UUID.class),
                            rs.getObject(5, UUID.class), rs.getObject(7, UUID.class), Counted.lineage(rs, 8),
                            Counted.cancelFrom(rs, 9)),
                            rs.getObject(6, OffsetDateTime.class)));
                }
            }
            return parents;
        }
    }

    private static RoundColumns columns(String saga, List<Store.Move> moves) {
        RoundColumns columns = new RoundColumns(moves.size());
        for (Store.Move move : moves) {
            if (!move.run().saga().equals(saga)) {
                throw new IllegalArgumentException("a round's runs are of one saga");
            }
            columns.add(move);
        }
        return columns;
    }

    /** Binds the advances' parameters (the clock, the runs, the events); returns the last. */
    private int bindAdvances(PreparedStatement ps, RoundColumns columns, String saga, String engine)
            throws SQLException {
        int i = 0;
        ps.setObject(++i, time.bind());
        ps.setString(++i, localSagas);
        i = columns.bind(ps, i);
        ps.setString(++i, saga);
        ps.setString(++i, engine);
        return columns.bindEvents(ps, i);
    }
}
