package dev.coop.internal.operate;

import dev.coop.internal.read.StoredLineage;
import dev.coop.internal.store.Counts;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;
import dev.coop.internal.store.Wakes;

import dev.coop.failure.CoopStoreException;

import dev.coop.CancelResult;
import dev.coop.failure.CancellationRequestedException;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.Failure;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.failure.RollbackRequestedException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/**
 * What operators and clients do to runs: cancel a scope and roll back (undo) a finished one ({@link ParkedRuns}
 * resolves parked runs). Each method runs inside the caller's transaction.
 */
public final class Operations {
    /** The first key of the advisory locks that serialise operator actions per hierarchy ("coop" in ASCII). */
    public static final int OPERATOR_LOCK = 0x636f6f70;

    /** The source recorded on failures that clients write. */
    public static final String CLIENT_SOURCE = "coop-client";

    private final SchemaName schema;
    private final Time time;
    /** The cancellation by statements that name the root, on Citus only ({@link RootCancellation}); else null. */
    private final RootCancellation byRoot;

    public Operations(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
        this.byRoot = schema.citus() ? new RootCancellation(schema, time) : null;
    }

    /** A scope in the cooperation tree: the lineage of a run. */
    private record Scope(UUID messageId, UUID[] lineage, String status) {
        UUID id() {
            return lineage[lineage.length - 1];
        }
    }

    /**
     * How long a rollback waits for the lock of a finished run. An engine's transaction may hold it for a moment
     * after the run finished (a claim that found the run no longer runnable keeps the lock it took until its round
     * commits); a run locked longer than this is running a step.
     */
    static final int LOCK_WAIT_MILLIS = 5_000;

    /**
     * The runs a message id or lineage names; with {@code lock}, row-locked, waiting at most {@link
     * #LOCK_WAIT_MILLIS} (a run locked longer is running a step: SQLSTATE 55P03).
     */
    private List<Scope> scopes(Connection c, MessageId message, Lineage lineage, boolean lock) throws SQLException {
        // on Citus a lock names the hierarchy's root (Citus refuses a FOR UPDATE across shards): the root of the
        // runs read without a lock first, by rollback
        UUID root = lock && schema.citus() ? scopes(c, message, lineage, false).getFirst().lineage()[0] : null;
        String sql = "SELECT message_id, lineage, status FROM {schema}.run WHERE " + (root != null
                ? "root_id = ? AND "
                : "") + (message != null ? "message_id = ? ORDER BY id" : "id = ?") + (lock ? " FOR UPDATE" : "");
        if (lock) {
            waitForLocksAtMost(c, schema);
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(sql))) {
            int i = 0;
            if (root != null) {
                ps.setObject(++i, root);
            }
            ps.setObject(++i, message != null ? message.value() : lineage.last());
            List<Scope> scopes = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    scopes.add(new Scope(rs.getObject(1, UUID.class), (UUID[]) rs.getArray(2).getArray(),
                            rs.getString(3)));
                }
            }
            if (scopes.isEmpty()) {
                throw new CoopValidationException(message != null
                        ? "No message " + message + " has runs"
                        : "No run with lineage " + lineage);
            }
            if (lineage != null) {
                StoredLineage.require(lineage, scopes.getFirst().lineage());
            }
            return scopes;
        }
    }

    /**
     * A cancellation request for one scope, logged, and the runs of the scope woken (happy-path waiters too), with a
     * notification per saga; nothing when the scope was cancelled before. A run that is due ({@code RUNNABLE},
     * {@code runnable_at} passed) may have a step running on it: skipped when locked, its engine's claim or advance
     * sees the cancellation. Any other run it reaches (waiting, due later, parked, held) is woken whoever holds its
     * lock: the update waits for it (a claim that rejected the run when it re-checked the row it locked keeps that
     * lock to its own commit, and would see nothing; so would a child counting off at it), then re-checks the row.
     */
    private static final String REQUEST_CANCELLATION = """
            WITH requested AS (
              INSERT INTO {schema}.cancellation (scope_id, lineage, failure, root_id)
              SELECT s, l, f::jsonb, l[1] FROM (VALUES (?::uuid, ?::uuid[], ?::text)) v(s, l, f)
              ON CONFLICT (scope_id) DO NOTHING
              RETURNING scope_id, root_id
            ), logged AS (
              INSERT INTO {schema}.event (message_id, type, lineage, exception, root_id)
              SELECT ?, 'CANCELLATION_REQUESTED', ?, ?::jsonb, root_id FROM requested
            ), clock AS (
              SELECT {now} AS now
            ), reached AS (
              SELECT id, status = 'RUNNABLE' AND runnable_at <= (SELECT now FROM clock) AS due FROM {schema}.run
               WHERE root_id = ?
                 AND (status IN ('RUNNABLE', 'PARKED', 'HELD') OR (status = 'WAITING' AND phase = 'HAPPY'))
                 AND lineage[1:cardinality(?::uuid[])] = ?::uuid[]
                 AND coalesce(cancel_from, 1) <= cardinality(?::uuid[]) -- runs it reaches
                 AND EXISTS (SELECT 1 FROM requested)
            ), due AS ( -- a step may run on it: skipped when locked
              SELECT id FROM {schema}.run WHERE id IN (SELECT id FROM reached WHERE due) FOR UPDATE SKIP LOCKED
            ), woken AS ( -- the others: the update waits for their locks and re-checks them as locked
              UPDATE {schema}.run SET status = 'RUNNABLE', runnable_at = (SELECT now FROM clock)
               WHERE id IN (SELECT id FROM due UNION ALL SELECT id FROM reached WHERE NOT due)
                 AND (status IN ('RUNNABLE', 'PARKED', 'HELD') OR (status = 'WAITING' AND phase = 'HAPPY'))
              RETURNING saga
            ), notified AS (
              SELECT pg_notify('coop_' || ?, w.saga) FROM (SELECT DISTINCT saga FROM woken) w
            )
            SELECT (SELECT count(*) FROM requested), (SELECT count(*) FROM notified)
            """;

    /**
     * Records cancellation requests for the scope; runs in it give up at their next step boundary. Runs waiting for
     * their children on the happy path are woken too: they give up at once, settling children that never started
     * (whose engine may be down), and roll back when the children that started finished. The checks run under the
     * hierarchy's operator lock, which a transaction that commits a run takes shared ({@code commit_allowed}, schema
     * version 24): a commit either finished before the check (ALREADY_FINISHED) or sees the cancellation and gives up
     * (REQUESTED). The wake does not skip a waiting run another transaction holds (see {@link #REQUEST_CANCELLATION}):
     * it waits {@link #LOCK_WAIT_MILLIS} at most, then the cancel fails, nothing requested. Runs launched by a
     * rollback, and those below them, are not reached by a cancellation of a scope above them (they are work of the
     * rollback it answers), so they do not count as running here.
     */
    public CancelResult cancel(Connection c, MessageId message, Lineage lineage, String reason) throws SQLException {
        serialise(c, scopes(c, message, lineage, false).getFirst().lineage()[0]);
        List<Scope> scopes = scopes(c, message, lineage, false);
        if (scopes.stream().noneMatch(s -> hasActiveRun(c, s, false))) {
            return CancelResult.ALREADY_FINISHED;
        }
        Failure failure = new Failure(reason, CancellationRequestedException.TYPE, CLIENT_SOURCE, List.of(),
                List.of());
        waitForLocksAtMost(c, schema); // the wake waits for the locks of the runs it must wake
        boolean any = false;
        try {
            for (Scope scope : scopes) {
                any |= requestCancellation(c, scope, failure);
            }
        } catch (SQLException e) {
            if ("55P03".equals(e.getSQLState())) {
                throw new CoopValidationException("Cannot cancel " + (message != null
                        ? "message " + message
                        : "scope " + lineage) + " now: one of its waiting runs is busy; try again");
            }
            throw e;
        }
        return any ? CancelResult.REQUESTED : CancelResult.ALREADY_REQUESTED;
    }

    /** Row locks of this transaction are waited for {@link #LOCK_WAIT_MILLIS} at most (then SQLSTATE 55P03). */
    static void waitForLocksAtMost(Connection c) throws SQLException {
        try (java.sql.Statement st = c.createStatement()) { // a constant, not input; for this transaction only
            st.execute("SELECT set_config('lock_timeout', '" + LOCK_WAIT_MILLIS + "', true)");
        }
    }

    /**
     * {@link #waitForLocksAtMost(Connection)}, on Citus also on the workers: the row locks are taken there, and Citus
     * sends a worker the transaction's {@code SET LOCAL} commands only when {@code citus.propagate_set_commands} is
     * {@code local} (a {@code set_config} never).
     */
    static void waitForLocksAtMost(Connection c, SchemaName schema) throws SQLException {
        if (!schema.citus()) {
            waitForLocksAtMost(c);
            return;
        }
        try (java.sql.Statement st = c.createStatement()) { // constants, not input; for this transaction only
            st.execute("SELECT set_config('citus.propagate_set_commands', 'local', true)");
            st.execute("SET LOCAL lock_timeout = " + LOCK_WAIT_MILLIS);
        }
    }

    /** Requests the cancellation of one scope; false when it was requested before. */
    private boolean requestCancellation(Connection c, Scope scope, Failure failure) throws SQLException {
        if (byRoot != null) {
            return byRoot.request(c, scope.messageId(), scope.lineage(), failure.toJson());
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(REQUEST_CANCELLATION))) {
            var array = c.createArrayOf("uuid", scope.lineage());
            ps.setObject(1, scope.id());
            ps.setArray(2, array);
            ps.setString(3, failure.toJson());
            ps.setObject(4, scope.messageId());
            ps.setArray(5, array);
            ps.setString(6, failure.toJson());
            ps.setObject(7, time.bind());
            ps.setObject(8, scope.lineage()[0]);
            ps.setArray(9, array);
            ps.setArray(10, array);
            ps.setArray(11, array);
            ps.setString(12, schema.value());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) > 0;
            }
        }
    }

    private boolean hasActiveRun(Connection c, Scope scope, boolean countRollbacks) {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT EXISTS (SELECT 1 FROM {schema}.run
                                WHERE root_id = ? AND status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD')
                                  AND (? OR phase = 'HAPPY')
                                  AND lineage[1:cardinality(?::uuid[])] = ?::uuid[]
                                  AND (? OR coalesce(cancel_from, 1) <= cardinality(?::uuid[])))
                """))) {
            var array = c.createArrayOf("uuid", scope.lineage());
            ps.setObject(1, scope.lineage()[0]);
            ps.setBoolean(2, countRollbacks);
            ps.setArray(3, array);
            ps.setArray(4, array);
            ps.setBoolean(5, countRollbacks); // a cancellation counts only the runs it reaches (version 24)
            ps.setArray(6, array);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        } catch (SQLException e) {
            throw new dev.coop.failure.CoopStoreException("Could not check scope " + Arrays.toString(scope.lineage()),
                    e);
        }
    }

    /**
     * Rolls back finished, committed runs and everything they caused, children first. Refused while anything in
     * the scope or above it still runs, and for runs that already rolled back.
     */
    public void rollback(Connection c, MessageId message, Lineage lineage, String reason) throws SQLException {
        List<Scope> unlocked = scopes(c, message, lineage, false);
        serialise(c, unlocked.getFirst().lineage()[0]);
        refuseUnlessFinished(c, scopes(c, message, lineage, false));
        List<Scope> scopes;
        try {
            scopes = scopes(c, message, lineage, true);
        } catch (SQLException e) {
            if ("55P03".equals(e.getSQLState())) {
                throw new CoopValidationException("Cannot roll back " + (message != null
                        ? "message " + message
                        : "scope " + lineage) + ": one of its runs is busy; try again");
            }
            throw e;
        }
        refuseUnlessFinished(c, scopes);
        Failure failure = new Failure(reason, RollbackRequestedException.TYPE, CLIENT_SOURCE, List.of(), List.of());
        for (Scope scope : scopes) {
            request(c, scope, failure);
        }
    }

    /**
     * Operator actions on one hierarchy take turns: a transaction-scoped advisory lock on its root, taken before any
     * check, so that {@code rollback(root)} and {@code rollback(child)} issued together cannot both pass their checks
     * (each would see the other's scope as finished) and roll the parent back before its child.
     */
    private void serialise(Connection c, UUID root) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_xact_lock(?, hashtext(?))")) {
            ps.setInt(1, OPERATOR_LOCK);
            ps.setString(2, root.toString());
            ps.execute();
        }
    }

    private void refuseUnlessFinished(Connection c, List<Scope> scopes) throws SQLException {
        for (Scope scope : scopes) {
            String name = "run " + scope.id() + " (lineage " + Arrays.toString(scope.lineage()) + ")";
            switch (scope.status()) {
                case "COMMITTED" -> {
                }
                case "ROLLED_BACK", "ROLLBACK_FAILED" -> throw new CoopValidationException(
                        "Cannot roll back " + name + ": it already " + ("ROLLED_BACK".equals(scope.status())
                                ? "rolled back"
                                : "failed to roll back"));
                default -> throw new CoopValidationException("Cannot roll back " + name
                        + ": it is still running (" + scope.status() + "); cancel it instead");
            }
            if (hasActiveRun(c, scope, true) || hasActiveAncestor(c, scope)) {
                throw new CoopValidationException("Cannot roll back " + name
                        + ": a run in its scope or above it is still running");
            }
        }
    }

    /** A committed scope's rollback: its request logged, its run made runnable on its rollback path, woken. */
    private static final String REQUEST_ROLLBACK = """
            WITH logged AS (
              INSERT INTO {schema}.event (message_id, type, lineage, exception, root_id)
              SELECT m, 'ROLLBACK_EMITTED', l, e::jsonb, l[1] FROM (VALUES (?::uuid, ?::uuid[], ?::text)) v(m, l, e)
            ), requested AS (
            UPDATE {schema}.run r
               SET phase = 'ROLLBACK', status = 'RUNNABLE', rollback_stage = 'START',
                   rollback_seq = r.steps_done - 1, rollback_cause = ?::jsonb, runnable_at = {now},
                   finished_at = NULL, pending_children = 0, failed_children = 0, version = r.version + 1
              FROM {schema}.run o -- the row as it was: when it committed
             WHERE r.id = ? AND o.id = r.id AND r.status = 'COMMITTED'
            RETURNING r.saga, r.saga_version, r.status, r.runnable_at, o.finished_at AS committed_at
            ), {counted}, {notified}
            SELECT count(*) FROM requested, notified
            """.replace("{notified}", Wakes.notifying("notified", "requested", Wakes.NONE_LOCAL))
            .replace("{counted}", Counts.supersededCommits("counted", "requested"));
    /**
     * {@link #REQUEST_ROLLBACK} on Citus: the run (and the row as it was) by the hierarchy's root, so that the
     * statement goes to the hierarchy's shard; Citus refuses the update by id alone joined with itself by id.
     */
    private static final String REQUEST_ROLLBACK_BY_ROOT = dev.coop.internal.store.CitusLayout.rewritten(
            REQUEST_ROLLBACK, "WHERE r.id = ? AND o.id = r.id",
            "WHERE r.root_id = ? AND r.id = ? AND o.root_id = r.root_id AND o.id = r.id");

    private void request(Connection c, Scope scope, Failure failure) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(schema.citus()
                ? REQUEST_ROLLBACK_BY_ROOT
                : REQUEST_ROLLBACK))) {
            ps.setObject(1, scope.messageId());
            ps.setArray(2, c.createArrayOf("uuid", scope.lineage()));
            ps.setString(3, failure.toJson());
            ps.setString(4, failure.toJson());
            ps.setObject(5, time.bind());
            int i = 5;
            if (schema.citus()) {
                ps.setObject(++i, scope.lineage()[0]);
            }
            ps.setObject(++i, scope.id());
            ps.executeQuery().close();
        }
    }

    /**
     * On Citus, one run a selection's rollback picked ({@link SelectionBatches}): the run locked by its root and id,
     * skipped when locked (a step or another operator holds it), and rolled back as {@link #rollback} rolls back a
     * committed scope when it is still committed with nothing running in its scope or above it. Whether it was.
     */
    boolean rollbackPicked(Connection c, UUID root, UUID id, Failure failure) throws SQLException {
        Scope scope = null;
        try (PreparedStatement ps = c.prepareStatement(schema.sql("SELECT message_id, lineage, status FROM"
                + " {schema}.run WHERE root_id = ? AND id = ? AND status = 'COMMITTED' FOR UPDATE SKIP LOCKED"))) {
            ps.setObject(1, root);
            ps.setObject(2, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    scope = new Scope(rs.getObject(1, UUID.class), (UUID[]) rs.getArray(2).getArray(),
                            rs.getString(3));
                }
            }
        }
        if (scope == null || hasActiveRun(c, scope, true) || hasActiveAncestor(c, scope)) {
            return false;
        }
        request(c, scope, failure);
        return true;
    }

    private boolean hasActiveAncestor(Connection c, Scope scope) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "SELECT EXISTS (SELECT 1 FROM {schema}.run WHERE id = ANY(?) AND status NOT IN ('COMMITTED',"
                        + " 'ROLLED_BACK', 'ROLLBACK_FAILED'))"))) {
            ps.setArray(1, c.createArrayOf("uuid", Arrays.copyOf(scope.lineage(), scope.lineage().length - 1)));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** Refuses a lineage that names no run, or names it with a lineage other than its own. */
    public void requireRun(Connection c, Lineage run) throws SQLException {
        scopes(c, null, run, false);
    }
}
