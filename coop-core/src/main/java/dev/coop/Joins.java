package dev.coop;

import dev.coop.internal.JoinBook;
import dev.coop.internal.JoinTimer;
import dev.coop.internal.Json;
import dev.coop.internal.SchemaName;
import dev.coop.internal.Store;
import dev.coop.internal.Tx;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Joins: a fan-in for code outside sagas. A join waits until an expected number of member messages finished, then
 * publishes exactly one message: a {@link JoinResult} on its on-complete topic, or on its on-fail topic when it failed
 * ({@link JoinSpec#failIfAnyFailed()}) or timed out. Get one from {@link CoopClient#joins()}.
 *
 * <pre>{@code
 * Joins joins = client.joins();
 * JoinId join = joins.start(JoinSpec.expecting(2).key("customer-42").onComplete(EXTRACTED).onFail(EXTRACT_FAILED)
 *         .failIfAnyFailed().timeout(Duration.ofMinutes(30)));
 * joins.attach(join, client.launch(EXTRACT_CUSTOMERS, request));
 * joins.attach(join, client.launch(EXTRACT_ORDERS, request));
 * // a saga on EXTRACTED (a Topic<JoinResult>) runs once both extractions committed
 * }</pre>
 *
 * <p>
 * A member is settled once: when every run of its message finished (committed: completed; any run rolled back or
 * failed to: failed), counted in the transaction that finishes the last run; or by an explicit
 * {@link #reportCompleted}/{@link #reportFailed}, whichever comes first. A message launched while no saga was
 * registered for its topic has no runs and counts as completed when attached. A member id that names no Coop message
 * (work done elsewhere) stays pending until reported.
 *
 * <p>
 * Inside a saga, do not use a join: the step barrier already is one (a step starts only after every run caused by the
 * previous step finished, and child failures reach the step's child-failure handler). Every method has a variant that
 * works inside the caller's transaction ({@code Connection} first), so that starting, attaching and reporting commit
 * with the business write that causes them. Thread-safe.
 */
public final class Joins {
    private final DataSource dataSource;
    private final SchemaName schema;
    private final JoinBook book;

    Joins(DataSource dataSource, SchemaName schema, Json json) {
        this.dataSource = dataSource;
        this.schema = schema;
        this.book = new JoinBook(new Store(schema), json);
    }

    /** Starts an open join in its own transaction. */
    public JoinId start(JoinSpec spec) {
        Prepared prepared = prepare(spec);
        JoinId id = Tx.run(dataSource, "start a join", c -> insert(c, prepared));
        expectTimeout(spec);
        return id;
    }

    /**
     * Starts an open join inside the caller's transaction: it exists only if the caller commits. (A connection in
     * auto-commit mode gets a transaction of its own.)
     */
    public JoinId start(Connection connection, JoinSpec spec) {
        Objects.requireNonNull(connection, "connection");
        Prepared prepared = prepare(spec);
        JoinId id = inCallerTransaction(connection, "start a join", c -> insert(c, prepared));
        expectTimeout(spec);
        return id;
    }

    private record Prepared(JoinSpec spec, String metadata) {
    }

    private Prepared prepare(JoinSpec spec) {
        Objects.requireNonNull(spec, "spec");
        spec.checkComplete();
        return new Prepared(spec, book.metadataJson(spec.metadata()));
    }

    private JoinId insert(Connection c, Prepared p) throws SQLException {
        JoinSpec spec = p.spec();
        return book.start(c, spec.key(), spec.expected(), spec.isFailIfAnyFailed(), p.metadata(),
                spec.onComplete().name(), spec.onFail().name(), spec.timeout() == null
                        ? null
                        : spec.timeout().toMillis());
    }

    private void expectTimeout(JoinSpec spec) {
        if (spec.timeout() != null) {
            JoinTimer.expect(schema, spec.timeout().toMillis());
        }
    }

    /**
     * Makes {@code message} a member of an open join; idempotent ({@link AttachResult#ALREADY_ATTACHED} when it is one
     * already, whatever the join's state). A message may belong to several joins. The message may have finished
     * already: it is settled at once.
     *
     * @throws CoopValidationException when there is no such join, the join already ended, or it already has its
     *         expected number of members
     */
    public AttachResult attach(JoinId join, MessageId message) {
        check(join, message);
        return Tx.run(dataSource, "attach message " + message + " to join " + join,
                c -> book.attach(c, join, message));
    }

    /** {@link #attach(JoinId, MessageId)} inside the caller's transaction, e.g. the one that launched the message. */
    public AttachResult attach(Connection connection, JoinId join, MessageId message) {
        Objects.requireNonNull(connection, "connection");
        check(join, message);
        return inCallerTransaction(connection, "attach message " + message + " to join " + join,
                c -> book.attach(c, join, message));
    }

    /**
     * Settles a pending member as completed, for work Coop does not see finish (or to decide for it). Idempotent per
     * member: {@link ReportResult#ALREADY_SETTLED} when it was settled before, by a report or by its runs; nothing
     * changes then. A report for a join that already ended is still recorded in its counters, but publishes nothing.
     *
     * @throws CoopValidationException when there is no such join or the message is not attached to it
     */
    public ReportResult reportCompleted(JoinId join, MessageId message) {
        return report(join, message, false);
    }

    /** Like {@link #reportCompleted(JoinId, MessageId)}, settling the member as failed. */
    public ReportResult reportFailed(JoinId join, MessageId message) {
        return report(join, message, true);
    }

    /** {@link #reportCompleted(JoinId, MessageId)} inside the caller's transaction. */
    public ReportResult reportCompleted(Connection connection, JoinId join, MessageId message) {
        return report(Objects.requireNonNull(connection, "connection"), join, message, false);
    }

    /** {@link #reportFailed(JoinId, MessageId)} inside the caller's transaction. */
    public ReportResult reportFailed(Connection connection, JoinId join, MessageId message) {
        return report(Objects.requireNonNull(connection, "connection"), join, message, true);
    }

    private ReportResult report(JoinId join, MessageId message, boolean failed) {
        check(join, message);
        return Tx.run(dataSource, what(join, message, failed), c -> book.report(c, join, message, failed));
    }

    private ReportResult report(Connection connection, JoinId join, MessageId message, boolean failed) {
        check(join, message);
        return inCallerTransaction(connection, what(join, message, failed),
                c -> book.report(c, join, message, failed));
    }

    private static String what(JoinId join, MessageId message, boolean failed) {
        return "report message " + message + (failed ? " failed" : " completed") + " in join " + join;
    }

    /**
     * The join, its counters and its members.
     *
     * @throws CoopValidationException when there is no such join
     */
    public JoinView get(JoinId join) {
        Objects.requireNonNull(join, "join");
        return Tx.run(dataSource, "read join " + join, c -> book.get(c, join));
    }

    /** Joins started with this grouping key, newest first, at most {@code limit} (1 to 1000). */
    public List<JoinView> byKey(String key, int limit) {
        if (key == null) {
            throw new CoopValidationException("A join key is required (null)");
        }
        if (limit < 1 || limit > 1000) {
            throw new CoopValidationException("limit must be between 1 and 1000, was " + limit);
        }
        return Tx.run(dataSource, "list the joins with key '" + key + "'", c -> book.byKey(c, key, limit));
    }

    private static void check(JoinId join, MessageId message) {
        if (join == null) {
            throw new CoopValidationException("A join id is required (null)");
        }
        if (message == null) {
            throw new CoopValidationException("A message id is required (null)");
        }
    }

    private static <T> T inCallerTransaction(Connection c, String what, Tx.Work<T> work) {
        return Tx.onCallersConnection(c, what, work);
    }
}
