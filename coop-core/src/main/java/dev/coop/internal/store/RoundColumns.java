package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/**
 * A round's moves as one array per column ({@link RoundAdvanceSql}'s {@code input}), and their events as one array per
 * column with the ordinal of their run.
 */
final class RoundColumns {
    private static final String[] TYPES = {"uuid", "uuid", "text", "text", "text", "integer", "text", "text",
            "integer", "text", "integer", "integer", "boolean", "integer", "text", "text", "text", "text",
            "integer", "text", "text", "boolean", "integer", "integer", "integer", "text", "uuid", "text"};
    private static final String[] EVENT_TYPES = {"integer", "text", "text", "text", "text", "boolean"};

    private final Object[][] runs;
    private final List<Object[]> events = new ArrayList<>();
    private int n;
    /** Whether a finished run counts off at its parent. */
    private boolean countsOff;

    RoundColumns(int size) {
        runs = new Object[TYPES.length][size];
    }

    void add(Store.Move move) {
        ClaimedRun run = move.run();
        Advance next = move.next();
        boolean finished = next.status().isFinished();
        if (!finished && !next.isQuietAlone()) {
            throw new IllegalArgumentException("only advances of runs that stay runnable now or finish");
        }
        UUID countOff = finished && run.awaited() ? run.parentId() : null;
        countsOff |= countOff != null;
        Object[] row = {run.id(), run.messageId(), literal(run.lineage()), String.valueOf(run.claimedAt()),
                next.rollback() ? "ROLLBACK" : "HAPPY", next.stepIndex(), next.nextStep(), next.finalStep(),
                next.stepsDone(), next.iterations() == null ? null : literal(next.iterations()), next.attempt(),
                next.pendingChildren(), next.keepFailedChildren(), next.rollbackSeq(), next.rollbackStage(),
                next.rollbackCause(), next.context(), next.result(), next.finallyDone(), next.failure(),
                run.xact(), next.checkCancellation(), next.instanceSeq(), next.instance(),
                next.instanceIteration(), finished ? next.status().name() : null, countOff,
                literal(run.cancelScope())};
        for (int k = 0; k < row.length; k++) {
            runs[k][n] = row[k];
        }
        n++;
        if (next.instance() != null && (move.entries().isEmpty()
                || move.entries().getFirst().type() != dev.coop.inspect.EventType.SUSPENDED)) {
            throw new IllegalStateException("an executed instance is recorded by its SUSPENDED, written first");
        }
        boolean first = true;
        for (LogEntry entry : move.entries()) {
            events.add(new Object[]{n, entry.type().name(), entry.step(), entry.exception(), entry.context(),
                    first && next.instance() != null});
            first = false;
        }
    }

    /** Whether a run of the moves finished and counts off at its parent. */
    boolean countsOff() {
        return countsOff;
    }

    int bind(PreparedStatement ps, int i) throws SQLException {
        Connection c = ps.getConnection();
        for (int k = 0; k < runs.length; k++) {
            ps.setArray(++i, c.createArrayOf(TYPES[k], runs[k]));
        }
        return i;
    }

    int bindEvents(PreparedStatement ps, int i) throws SQLException {
        Connection c = ps.getConnection();
        for (int k = 0; k < EVENT_TYPES.length; k++) {
            Object[] column = new Object[events.size()];
            for (int e = 0; e < column.length; e++) {
                column[e] = events.get(e)[k];
            }
            ps.setArray(++i, c.createArrayOf(EVENT_TYPES[k], column));
        }
        return i;
    }

    /** An array's literal ({@code {a,b}}): its elements need no quoting (uuids, integers). */
    private static String literal(UUID[] values) {
        return "{" + String.join(",", Arrays.stream(values).map(UUID::toString).toList()) + "}";
    }

    private static String literal(int[] values) {
        return "{" + String.join(",", Arrays.stream(values).mapToObj(Integer::toString).toList()) + "}";
    }
}
