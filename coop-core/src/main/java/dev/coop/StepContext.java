package dev.coop;

import java.sql.Connection;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * Everything a step can see and do. Valid only while the step runs, on the thread that runs it.
 *
 * @param <P> the payload type of the saga's topic
 */
public interface StepContext<P> {
    /** The message's payload, read as the topic's payload type. */
    P payload();

    /** The message this run handles. */
    MessageId messageId();

    /** The name of the saga. */
    String saga();

    /** The name of the step running now. */
    String step();

    /** This run's id: the last element of its lineage. */
    UUID runId();

    /** This run's place in the cooperation tree. */
    Lineage lineage();

    /** The attempt of this step under its retry policy, starting at 1. */
    int attempt();

    /**
     * How many times this run executed this step, this time included, starting at 1: loops ({@link Flow#repeat()},
     * {@link Flow#goTo(String)} back) count up. In a compensation: the iteration being undone.
     */
    int iteration();

    /** When this step's transaction started, by the engine's time (see {@link TimeSource}). */
    Instant startedAt();

    /** The run's cooperation context as this step sees it, with the changes the step made so far. */
    CooperationContext context();

    /**
     * Replaces the run's context. The change is kept when the step commits (the run's later steps and the children
     * launched after this call see it) and dropped when the step fails. Deadlines can only be tightened.
     */
    void setContext(CooperationContext context);

    /** Sets one context entry; see {@link #setContext(CooperationContext)}. */
    default <T> void putContext(ContextKey<T> key, T value) {
        setContext(context().with(key, value));
    }

    /**
     * The deadline that applies now: the earlier of the happy-path (or, in a compensation, the rollback-path) and
     * the absolute deadline of the context.
     */
    Optional<Deadline> deadline();

    /**
     * Sets the run's result, read by the parent's next step ({@link #childResults()}) and by clients
     * ({@link CoopClient#results(MessageId)}). The value set last before the run commits counts.
     */
    void setResult(Object result);

    /**
     * The results of the runs caused by this run's previous step (for a step after a child-failure handler: by the
     * step and its handler runs; a finally part in between, which launches nothing, is passed over), one per message
     * and saga, oldest first. A run that did not commit has none and says why.
     */
    List<RunResult> childResults();

    /**
     * The result of the one run handling {@code message} among {@link #childResults()}, read as {@code type}.
     *
     * @throws RunResult.NoResultException when that run rolled back (the message says why) or set no result
     * @throws dev.coop.failure.CoopValidationException when the message was not launched by the previous step, or
     *         several sagas handled it (name the saga then)
     */
    <T> T childResult(MessageId message, Class<T> type);

    /** The result of the run of saga {@code saga} handling {@code message}; see {@link #childResult}. */
    <T> T childResult(MessageId message, String saga, Class<T> type);

    /**
     * Opens an external task: a child of this step whose handler lives outside Coop, completed or failed by whoever
     * holds its token (or key) through {@link CoopClient#complete(String, Object)} and
     * {@link CoopClient#fail(String, String)}. The run's next step starts when every child and external task of this
     * step finished; the task inherits this run's deadlines (a missed deadline or a cancellation settles it), its
     * failure is a child failure, and a rollback of the scope after it completed launches its compensation. Written
     * when the step commits: a step that fails opened nothing (hand the token out through the step's own writes,
     * e.g. an outbox row on {@link #connection()}).
     *
     * @param name what the task is: 1-200 characters of {@code [A-Za-z0-9._:/-]}, starting with a letter or digit
     *        (it is the task message's topic)
     * @param payload what whoever completes it needs to know (JSON-serialisable, within the payload limit)
     */
    default ExternalTask openTask(String name, Object payload) {
        return openTask(name, payload, TaskOptions.none());
    }

    /** Opens an external task with options (a correlation key, a compensation); see {@link #openTask(String, Object)}. */
    ExternalTask openTask(String name, Object payload, TaskOptions options);

    /**
     * Waits for a signal sent to {@code key} ({@link CoopClient#signal(String, Object, java.time.Duration)}): opens an
     * external task named {@code name} with {@code key} as its correlation key, which the oldest signal kept for the
     * key completes at once (when this step commits), or else the next signal sent to it. The next step reads the
     * signal's payload with {@link #taskResult(String, Class)}. The wait is bounded by the run's deadlines, like any
     * external task's.
     */
    ExternalTask awaitSignal(String name, String key);

    /**
     * Waits for a signal sent to {@code key} as {@link #awaitSignal(String, String)}, for at most {@code timeout}:
     * no signal by then is a child failure of this step (the task times out, {@link TaskState#TIMED_OUT}), which its
     * child-failure handler may recover from, e.g. by waiting again, or which rolls the run back.
     */
    ExternalTask awaitSignal(String name, String key, java.time.Duration timeout);

    /**
     * The result of the one external task named {@code name} that the previous step opened (see
     * {@link #childResults()} for which step that is; when its child-failure handler opened the task again, the
     * handler's), read as {@code type}.
     *
     * @throws RunResult.NoResultException when the task failed, timed out or was cancelled (the message says why)
     * @throws dev.coop.failure.CoopValidationException when the previous step opened no task, or several, of that name
     */
    <T> T taskResult(String name, Class<T> type);

    /**
     * Throws a {@link dev.coop.failure.GaveUpException} when this run's scope (or one above it) was cancelled, so a
     * long step can stop early. The step's transaction then rolls back and the run rolls back. Coop also checks at
     * every step boundary.
     */
    void giveUpIfRequested();

    /** The engine instance running this step. */
    String engineId();

    /**
     * The step's JDBC connection: business writes made here commit or roll back together with the step and the
     * messages it launches. Do not commit, roll back or close it; Coop does.
     */
    Connection connection();

    /**
     * Launches a message in this run's scope: every saga registered for the topic handles it, and the next step of
     * this run starts only after all of those runs (and their children) finished. The message is written when the
     * step commits; nothing escapes if the step fails.
     */
    <T> MessageId launch(Topic<T> topic, T payload);

    /**
     * Launches a message in this run's scope, as {@link #launch(Topic, Object)}; its runs start with this run's
     * context plus {@code context} ({@code context} winning, except that deadlines can only be tightened).
     */
    <T> MessageId launch(Topic<T> topic, T payload, CooperationContext context);

    /**
     * Launches a message in this run's scope whose runs start at {@code at} (by the database's clock), not before:
     * a delayed child. The barrier awaits it like any other, so the next step of this run starts only after it ran
     * (an instant in the past starts it at once). The wait holds no thread; a cancellation or a missed deadline of
     * this run settles a delayed child that has not started without running it.
     */
    <T> MessageId launch(Topic<T> topic, T payload, Instant at);

    /** A delayed launch in this run's scope ({@link #launch(Topic, Object, Instant)}) with extra context. */
    <T> MessageId launch(Topic<T> topic, T payload, CooperationContext context, Instant at);

    /**
     * Launches a message in this run's scope, as {@link #launch(Topic, Object)}, with the given options (see
     * {@link LaunchOptions}): its runs start with this run's context plus the options' context.
     *
     * @return the message's id; with an idempotency key that a message of the topic already holds, that message's id,
     *         and nothing is launched: this run does not wait for that message
     */
    <T> MessageId launch(Topic<T> topic, T payload, LaunchOptions options);

    /**
     * Launches a message that starts a new, independent hierarchy, as {@link #launchOnGlobalScope(Topic, Object)},
     * with the given options (see {@link LaunchOptions}); its runs start with the options' context only.
     */
    <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, LaunchOptions options);

    /**
     * Launches a message that starts a new, independent hierarchy; this run does not wait for it. Its runs start
     * with an empty context.
     */
    <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload);

    /** Launches a message that starts a new, independent hierarchy with the context {@code context}. */
    <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, CooperationContext context);

    /**
     * Launches a message that starts a new, independent hierarchy at {@code at} (by the database's clock), not
     * before; this run does not wait for it. Written when the step commits, like every launch.
     */
    <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, Instant at);

    /** A delayed launch on the global scope with the context {@code context}. */
    <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, CooperationContext context, Instant at);
}
