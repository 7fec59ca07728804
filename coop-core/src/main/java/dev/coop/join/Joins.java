package dev.coop.join;

import dev.coop.MessageId;

import java.sql.Connection;
import java.util.List;

/**
 * Joins: a fan-in for code outside sagas. A join waits until an expected number of member messages finished, then
 * publishes exactly one message: a {@link JoinResult} on its on-complete topic, or on its on-fail topic when it failed
 * ({@link JoinSpec#failIfAnyFailed()}) or timed out. Get one from {@link dev.coop.CoopClient#joins()}.
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
public interface Joins {
    /** Starts an open join in its own transaction. */
    JoinId start(JoinSpec spec);

    /**
     * Starts an open join inside the caller's transaction: it exists only if the caller commits. (A connection in
     * auto-commit mode gets a transaction of its own.)
     */
    JoinId start(Connection connection, JoinSpec spec);

    /**
     * Makes {@code message} a member of an open join; idempotent ({@link AttachResult#ALREADY_ATTACHED} when it is one
     * already, whatever the join's state). A message may belong to several joins. The message may have finished
     * already: it is settled at once.
     *
     * @throws dev.coop.failure.CoopValidationException when there is no such join, the join already ended, or it
     *         already has its expected number of members
     */
    AttachResult attach(JoinId join, MessageId message);

    /** {@link #attach(JoinId, MessageId)} inside the caller's transaction, e.g. the one that launched the message. */
    AttachResult attach(Connection connection, JoinId join, MessageId message);

    /**
     * Settles a pending member as completed, for work Coop does not see finish (or to decide for it). Idempotent per
     * member: {@link ReportResult#ALREADY_SETTLED} when it was settled before, by a report or by its runs; nothing
     * changes then. A report for a join that already ended is still recorded in its counters, but publishes nothing.
     *
     * @throws dev.coop.failure.CoopValidationException when there is no such join or the message is not attached to it
     */
    ReportResult reportCompleted(JoinId join, MessageId message);

    /** Like {@link #reportCompleted(JoinId, MessageId)}, settling the member as failed. */
    ReportResult reportFailed(JoinId join, MessageId message);

    /** {@link #reportCompleted(JoinId, MessageId)} inside the caller's transaction. */
    ReportResult reportCompleted(Connection connection, JoinId join, MessageId message);

    /** {@link #reportFailed(JoinId, MessageId)} inside the caller's transaction. */
    ReportResult reportFailed(Connection connection, JoinId join, MessageId message);

    /**
     * The join, its counters and its members.
     *
     * @throws dev.coop.failure.CoopValidationException when there is no such join
     */
    JoinView get(JoinId join);

    /** Joins started with this grouping key, newest first, at most {@code limit} (1 to 1000). */
    List<JoinView> byKey(String key, int limit);
}
