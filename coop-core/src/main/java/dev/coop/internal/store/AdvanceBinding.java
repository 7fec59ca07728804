package dev.coop.internal.store;

import static dev.coop.internal.store.Store.setInteger;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/**
 * Binds the parameters of one advance ({@link AdvanceSql#ADVANCE} and its forms): its own part, before any count-off,
 * in the order of the statement's text: the events, the executed instance their SUSPENDED carries, the run's new
 * state, its due time (left out of a quiet advance, {@link AdvanceSql#quiet}), then the rest of the run's columns and
 * its row's key and its guard's checks ({@link AdvanceSql#GUARD}).
 */
final class AdvanceBinding {
    private final String localSagas;
    /** Whether the events are bound row by row ({@link AdvanceSql#eventValues}, on Citus) rather than as arrays. */
    private final boolean eventValues;

    /** @param localSagas the sagas whose runs the caller wakes in-process (no NOTIFY for them), comma-separated */
    AdvanceBinding(String localSagas) {
        this(localSagas, false);
    }

    private AdvanceBinding(String localSagas, boolean eventValues) {
        this.localSagas = localSagas;
        this.eventValues = eventValues;
    }

    /** This binding for the advance's events sent as {@link AdvanceSql#eventValues} (on Citus). */
    AdvanceBinding withEventValues() {
        return new AdvanceBinding(localSagas, true);
    }

    /** The sagas whose runs the caller wakes in-process, comma-separated ({@link Wakes}). */
    String localSagas() {
        return localSagas;
    }

    /** Binds the parameters of one advance from {@code i}; returns the last. */
    int bind(PreparedStatement ps, int i, Store.Move move, String engine, boolean quiet, OffsetDateTime now)
            throws SQLException {
        if (eventValues) {
            i = bindEventValues(ps, i, move.run(), engine, move.entries(), move.next());
        } else {
            i = bindEvents(ps, i, move.run(), engine, move.entries());
            i = bindInstance(ps, i, move.next(), move.entries());
        }
        i = bindState(ps, i, move.next(), quiet, now);
        if (!quiet) {
            i = bindRunnableAt(ps, i, move.next(), now);
        }
        return bindEnd(ps, i, move, now);
    }

    /** The checks of the advance's guard ({@link AdvanceSql#GUARD}, schema version 30). */
    private static int bindGuard(PreparedStatement ps, int i, ClaimedRun run, Advance next) throws SQLException {
        java.sql.Array scope = ps.getConnection().createArrayOf("uuid", run.cancelScope());
        ps.setString(++i, run.xact());
        ps.setBoolean(++i, excludesCancellation(run, next)); // commit_allowed (version 24)
        ps.setObject(++i, run.rootId());
        ps.setArray(++i, scope);
        ps.setBoolean(++i, next.checkCancellation());
        for (int k = 0; k < 2; k++) { // the cancellation seen, then assert_not_cancelled
            ps.setObject(++i, run.rootId());
            ps.setArray(++i, scope);
        }
        return i;
    }

    /** The events' columns: the run's, then one array per column of the entries. */
    private static int bindEvents(PreparedStatement ps, int i, ClaimedRun run, String engine, List<LogEntry> entries)
            throws SQLException {
        String[] types = column(entries, e -> e.type().name());
        String[] steps = column(entries, LogEntry::step);
        String[] exceptions = column(entries, LogEntry::exception);
        String[] contexts = column(entries, LogEntry::context);
        Connection c = ps.getConnection();
        ps.setObject(++i, run.messageId());
        ps.setString(++i, run.saga());
        ps.setString(++i, engine);
        ps.setArray(++i, c.createArrayOf("uuid", run.lineage()));
        ps.setObject(++i, run.claimedAt());
        ps.setObject(++i, run.rootId());
        ps.setArray(++i, c.createArrayOf("text", types));
        ps.setArray(++i, c.createArrayOf("text", steps));
        ps.setArray(++i, c.createArrayOf("text", exceptions));
        ps.setArray(++i, c.createArrayOf("text", contexts));
        return i;
    }

    /**
     * The events as rows of {@link AdvanceSql#eventValues} (on Citus): each with the run's columns and its own, the
     * first (the SUSPENDED) with the executed instance, as {@link #bindInstance} binds it for the arrays' form.
     */
    private static int bindEventValues(PreparedStatement ps, int i, ClaimedRun run, String engine,
            List<LogEntry> entries, Advance next) throws SQLException {
        java.sql.Array lineage = ps.getConnection().createArrayOf("uuid", run.lineage());
        for (int k = 0; k < entries.size(); k++) {
            LogEntry entry = entries.get(k);
            ps.setObject(++i, run.messageId());
            ps.setString(++i, entry.type().name());
            ps.setString(++i, run.saga());
            ps.setString(++i, engine);
            ps.setString(++i, entry.step());
            ps.setArray(++i, lineage);
            ps.setString(++i, entry.exception());
            ps.setObject(++i, run.claimedAt());
            ps.setString(++i, entry.context());
            if (k == 0) {
                i = bindInstance(ps, i, next, entries);
            } else {
                for (int n = 0; n < 3; n++) {
                    setInteger(ps, ++i, null);
                }
            }
            ps.setObject(++i, run.rootId());
        }
        if (entries.isEmpty() && next.instance() != null) {
            throw new IllegalStateException("an executed instance is recorded by its SUSPENDED, written first");
        }
        return i;
    }

    private static String[] column(List<LogEntry> entries, Function<LogEntry, String> value) {
        String[] column = new String[entries.size()];
        for (int k = 0; k < entries.size(); k++) {
            column[k] = value.apply(entries.get(k));
        }
        return column;
    }

    /** Binds the executed instance that the advance's first event (its SUSPENDED) carries, or nulls (none). */
    private static int bindInstance(PreparedStatement ps, int i, Advance next, List<LogEntry> entries)
            throws SQLException {
        boolean carried = next.instance() != null;
        if (carried && (entries.isEmpty() || entries.get(0).type() != dev.coop.inspect.EventType.SUSPENDED)) {
            throw new IllegalStateException("an executed instance is recorded by its SUSPENDED, written first");
        }
        setInteger(ps, ++i, carried ? next.instanceSeq() : null);
        setInteger(ps, ++i, next.instance());
        setInteger(ps, ++i, carried ? next.instanceIteration() : null);
        return i;
    }

    /** The run's new state, from its status (left out when quiet) to its rollback cause. */
    private static int bindState(PreparedStatement ps, int i, Advance next, boolean quiet, OffsetDateTime now)
            throws SQLException {
        if (!quiet) {
            ps.setString(++i, next.status().name());
        }
        ps.setString(++i, next.rollback() ? "ROLLBACK" : "HAPPY");
        ps.setInt(++i, next.stepIndex());
        ps.setString(++i, next.nextStep());
        ps.setString(++i, next.finalStep());
        ps.setInt(++i, next.stepsDone());
        if (next.iterations() == null) {
            ps.setNull(++i, Types.ARRAY);
        } else {
            ps.setArray(++i,
                    ps.getConnection().createArrayOf("integer", Arrays.stream(next.iterations()).boxed().toArray()));
        }
        ps.setInt(++i, next.attempt());
        ps.setInt(++i, next.pendingChildren());
        ps.setBoolean(++i, next.keepFailedChildren());
        ps.setInt(++i, next.pendingChildren());
        ps.setObject(++i, now);
        setInteger(ps, ++i, next.rollbackSeq());
        ps.setString(++i, next.rollbackStage());
        ps.setString(++i, next.rollbackCause());
        return i;
    }

    /** The seven parameters of the advance's {@code runnable_at}, which a quiet advance leaves out. */
    private static int bindRunnableAt(PreparedStatement ps, int i, Advance next, OffsetDateTime now)
            throws SQLException {
        ps.setObject(++i, next.runnableAt());
        ps.setObject(++i, next.runnableAt());
        ps.setObject(++i, now);
        ps.setLong(++i, next.delayMillis());
        ps.setString(++i, next.status().name());
        ps.setObject(++i, now);
        ps.setLong(++i, next.delayMillis());
        return i;
    }

    /**
     * Whether the advance reads the cancellation of the run's scope under the hierarchy's operator lock ({@code
     * commit_allowed}) rather than with its statement's snapshot: when it commits the run, and when it leaves a run on
     * the happy path waiting (for children, or until a time), which only a cancellation's wake would move on. Then a
     * cancellation either waits for this transaction (its lock, taken shared, is held to the commit), and wakes the
     * run after it, or was committed first and is seen (CP001). A run left runnable now needs neither: its next claim
     * reads the cancellation.
     */
    static boolean excludesCancellation(ClaimedRun run, Advance next) {
        dev.coop.RunStatus status = next.status();
        if (status == dev.coop.RunStatus.COMMITTED) {
            return true;
        }
        return next.checkCancellation() && !status.isFinished()
                && (status != dev.coop.RunStatus.RUNNABLE || next.delayMillis() > 0
                        || next.runnableAt() != null && next.runnableAt().isAfter(run.claimedAt()));
    }

    /** The run's remaining columns, from its context to its failure, then its row's key, its guard and its wake-up. */
    private int bindEnd(PreparedStatement ps, int i, Store.Move move, OffsetDateTime now) throws SQLException {
        ClaimedRun run = move.run();
        Advance next = move.next();
        ps.setString(++i, next.context());
        ps.setString(++i, next.result());
        setInteger(ps, ++i, next.finallyDone());
        setInteger(ps, ++i, next.finallyDone());
        ps.setObject(++i, run.claimedAt());
        ps.setBoolean(++i, next.status().isFinished());
        ps.setObject(++i, now);
        ps.setString(++i, next.failure());
        ps.setObject(++i, run.rootId());
        ps.setObject(++i, run.id());
        i = bindGuard(ps, i, run, next);
        String wake = next.status() == dev.coop.RunStatus.RUNNABLE
                ? Wakes.later(run.saga(), next.delayMillis(), next.runnableAt(), now)
                : null;
        ps.setString(++i, wake); // a run left due later notifies the other engines (schema version 27)
        ps.setString(++i, wake);
        return i;
    }
}
