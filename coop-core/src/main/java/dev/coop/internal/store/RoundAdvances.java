package dev.coop.internal.store;

import dev.coop.internal.step.Advance;
import dev.coop.internal.step.ClaimedRun;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/**
 * The deferred advances of a round (runs of one saga, none with a parent to count off: runs that stay runnable now,
 * and runs that finished) in one statement: one insert of all their events (each run's first one carrying its
 * executed step instance), one update of the runs that stay runnable, one of the runs that finished. Each run's part is what its own
 * advance ({@link AdvanceSql#ADVANCE_ALONE}; quiet for a run that stays runnable) writes; only the per-statement cost is paid
 * once instead of once a run. Arrays travel as one parameter per column; a run's own arrays (lineage, iterations) as
 * text literals, cast back by the statement.
 */
final class RoundAdvances {
    /** What a run's update sets besides its status, due time and end, whether it stays runnable or finishes. */
    private static final String SET = """
            SET phase = i.phase, step_index = i.step_index, next_step = i.next_step,
                final_step = nullif(coalesce(i.final_step, r.final_step), ''), steps_done = i.steps_done,
                iterations = coalesce(i.iterations::int[], r.iterations),
                attempt = i.attempt, pending_children = i.pending,
                failed_children = CASE WHEN i.keep_failed THEN r.failed_children ELSE 0 END,
                waiting_since = CASE WHEN i.pending = 0 THEN NULL ELSE coalesce(r.waiting_since, k.now) END,
                rollback_seq = i.rollback_seq, rollback_stage = i.rollback_stage,
                rollback_cause = i.rollback_cause::jsonb, resolution = NULL,
                context = i.context,
                result = coalesce(i.result, r.result),
                finally_done = CASE WHEN i.finally_done IS NULL THEN r.finally_done
                                    ELSE r.finally_done || i.finally_done END,
                started_at = coalesce(r.started_at, i.claimed_at::timestamptz),
                failure = i.failure::jsonb, retries = 0, reserved_until = NULL, version = r.version + 1""";

    /**
     * Which runs an update takes ({@code %s}), each checked as the single advance checks it: its claim's transaction
     * is still this one, and (when asked) its scope was not cancelled.
     */
    private static final String WHERE = """
              FROM input i, clock k
             WHERE r.id = i.id AND %s
               AND CASE WHEN pg_current_xact_id() = i.xact::xid8 THEN true ELSE {schema}.claim_lost() END
               AND CASE WHEN i.check_cancellation AND EXISTS (SELECT 1 FROM {schema}.cancellation x
                                                               WHERE x.scope_id = ANY(r.lineage))
                        THEN {schema}.assert_not_cancelled(r.lineage) ELSE true END
            RETURNING 1""";

    /**
     * The statement. {@code clock} reads the time once and tells the run triggers which sagas this engine wakes
     * in-process (no NOTIFY for them), before any row changes. A finished run's due time becomes now, as its own
     * advance sets it.
     */
    private static final String SQL = """
            WITH clock AS MATERIALIZED (
              SELECT {now} AS now, set_config('coop.local_sagas', ?, true) AS local_sagas
            ), input AS (
              SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[], ?::text[], ?::int[], ?::text[],
                                   ?::text[], ?::int[], ?::text[], ?::int[], ?::int[], ?::boolean[], ?::int[], ?::text[],
                                   ?::text[], ?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::boolean[],
                                   ?::int[], ?::int[], ?::int[], ?::text[])
                     WITH ORDINALITY AS i(id, message_id, lineage, claimed_at, phase, step_index, next_step, final_step,
                                          steps_done, iterations, attempt, pending, keep_failed, rollback_seq,
                                          rollback_stage, rollback_cause, context, result, finally_done, failure, xact,
                                          check_cancellation, instance_seq, instance, iteration, finished, n)
            ), events AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, exception, started_at, context,
                                          step_seq, instance, iteration)
              SELECT i.message_id, e.type, ?, ?, e.step, i.lineage::uuid[], e.exception::jsonb,
                     i.claimed_at::timestamptz, e.context,
                     CASE WHEN e.first THEN i.instance_seq END, CASE WHEN e.first THEN i.instance END,
                     CASE WHEN e.first THEN i.iteration END -- the run's SUSPENDED carries its executed instance
                FROM unnest(?::int[], ?::text[], ?::text[], ?::text[], ?::text[], ?::boolean[])
                     WITH ORDINALITY AS e(run, type, step, exception, context, first, n)
                JOIN input i ON i.n = e.run
               ORDER BY e.n
              RETURNING 1
            ), runnable AS (
              UPDATE {schema}.run r
            {set}
            {runnable}
            ), finished AS (
              UPDATE {schema}.run r
            {set},
                     status = i.finished, runnable_at = k.now, finished_at = k.now
            {finished}
            )
            SELECT (SELECT count(*) FROM runnable) + (SELECT count(*) FROM finished), (SELECT count(*) FROM events)"""
            .replace("{set}", SET)
            .replace("{runnable}", WHERE.formatted("i.finished IS NULL"))
            .replace("{finished}", WHERE.formatted("i.finished IS NOT NULL"));

    private final String sql;
    private final String commitSql;
    private final String joinCheckSql;
    private final Time time;
    private final String localSagas;

    RoundAdvances(SchemaName schema, Time time, String localSagas) {
        this.sql = schema.sql(SQL);
        this.commitSql = sql + ";\nCOMMIT";
        this.joinCheckSql = sql + ";\n" + schema.sql(Advances.JOIN_CHECK); // then the join check and COMMIT
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
        Columns columns = new Columns(moves.size());
        for (Store.Move move : moves) {
            if (!move.run().saga().equals(saga)) {
                throw new IllegalArgumentException("a round's runs are of one saga");
            }
            columns.add(move);
        }
        boolean checkJoins = commit && !finished.isEmpty();
        try (PreparedStatement ps = c.prepareStatement(checkJoins ? joinCheckSql : commit ? commitSql : sql)) {
            int i = 0;
            ps.setObject(++i, time.bind());
            ps.setString(++i, localSagas);
            i = columns.bind(ps, i);
            ps.setString(++i, saga);
            ps.setString(++i, engine);
            i = columns.bindEvents(ps, i);
            if (checkJoins) {
                ps.setArray(++i, c.createArrayOf("uuid", finished.toArray()));
            }
            if (checkJoins) {
                return Advances.committedUnlessJoined(ps);
            }
            Advances.executeAll(ps); // a failure (a cancellation, a lost claim, the database): the caller rolls back
            return true;
        }
    }

    /** The moves as one array per column, and their events as one array per column with the ordinal of their run. */
    private static final class Columns {
        private static final String[] TYPES = {"uuid", "uuid", "text", "text", "text", "integer", "text", "text",
                "integer", "text", "integer", "integer", "boolean", "integer", "text", "text", "text", "text",
                "integer", "text", "text", "boolean", "integer", "integer", "integer", "text"};
        private static final String[] EVENT_TYPES = {"integer", "text", "text", "text", "text", "boolean"};

        private final Object[][] runs;
        private final List<Object[]> events = new ArrayList<>();
        private int n;

        Columns(int size) {
            runs = new Object[TYPES.length][size];
        }

        void add(Store.Move move) {
            ClaimedRun run = move.run();
            Advance next = move.next();
            boolean finished = next.status().isFinished();
            if (!finished && !next.isQuietAlone()) {
                throw new IllegalArgumentException("only advances of runs that stay runnable now or finish");
            }
            if (finished && run.parentId() != null && run.awaited()) {
                throw new IllegalArgumentException("a finished run with a parent to count off goes alone");
            }
            Object[] row = {run.id(), run.messageId(), literal(run.lineage()), String.valueOf(run.claimedAt()),
                    next.rollback() ? "ROLLBACK" : "HAPPY", next.stepIndex(), next.nextStep(), next.finalStep(),
                    next.stepsDone(), next.iterations() == null ? null : literal(next.iterations()), next.attempt(),
                    next.pendingChildren(), next.keepFailedChildren(), next.rollbackSeq(), next.rollbackStage(),
                    next.rollbackCause(), next.context(), next.result(), next.finallyDone(), next.failure(),
                    run.xact(), next.checkCancellation(), next.instanceSeq(), next.instance(),
                    next.instanceIteration(), finished ? next.status().name() : null};
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
}
