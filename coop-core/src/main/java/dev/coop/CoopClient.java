package dev.coop;

import dev.coop.inspect.AuditEntry;
import dev.coop.inspect.Event;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.RunView;
import dev.coop.inspect.SagaVersionSummary;
import dev.coop.inspect.TaskView;
import dev.coop.internal.Completions;
import dev.coop.internal.Listeners;
import dev.coop.internal.client.ClientContext;
import dev.coop.internal.client.ClientSchedules;
import dev.coop.internal.client.CompletionWait;
import dev.coop.internal.client.Housekeeping;
import dev.coop.internal.client.Launches;
import dev.coop.internal.client.OperatorActions;
import dev.coop.internal.client.Reads;
import dev.coop.internal.client.ClientTasks;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Time;
import dev.coop.internal.task.TaskSettlement;
import dev.coop.join.Joins;
import dev.coop.schedule.Schedule;
import dev.coop.schedule.ScheduleSummary;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.ObjIntConsumer;
import javax.sql.DataSource;

/**
 * Launches messages and inspects what became of them. Talks only to the database: it works without an engine in
 * this JVM ({@link Coop#client(DataSource)}), and every engine has one ({@link CoopEngine#client()}). Thread-safe.
 */
public final class CoopClient {
    /** The most events {@link #events(MessageId)} returns; larger logs are read in pages. */
    public static final int MAX_EVENTS_AT_ONCE = 10_000;

    /** What every part of this client shares: its database, store, mapper, time and engine wake-up. */
    private final ClientContext client;
    private final Launches launches;
    private final CompletionWait completionWait;
    private final Reads reads;
    private final OperatorActions actions;
    private final ClientTasks tasks;
    private final ClientSchedules schedules;
    private final Housekeeping housekeeping;

    CoopClient(DataSource dataSource, SchemaName schema, Json json, Completions completions,
            ObjIntConsumer<String> localWake, boolean signalled, boolean requireHandlers, Time time,
            Listeners listeners) {
        this(dataSource, schema, json, completions, localWake, signalled, requireHandlers, time, Set.of(), listeners);
    }

    /**
     * @param localWake wakes the engine this client belongs to: a saga and how many of its runs became due
     * @param signalled whether this client learns the outcome of messages it launched from the engine it belongs to
     * @param localSagas the sagas {@code localWake} wakes (an engine's own): launching them notifies nobody
     */
    CoopClient(DataSource dataSource, SchemaName schema, Json json, Completions completions,
            ObjIntConsumer<String> localWake, boolean signalled, boolean requireHandlers, Time time,
            Set<String> localSagas, Listeners listeners) {
        this.client = new ClientContext(dataSource, new Store(schema, requireHandlers, time), json, time, localWake);
        this.launches = new Launches(client, new Store(schema, requireHandlers, time, localSagas), requireHandlers,
                completions, signalled, listeners);
        this.reads = new Reads(client);
        this.completionWait = new CompletionWait(client, reads, completions, signalled);
        this.actions = new OperatorActions(client);
        this.tasks = new ClientTasks(client);
        this.schedules = new ClientSchedules(client);
        this.housekeeping = new Housekeeping(client);
    }

    /** Starts configuring a client; {@link Coop#client(DataSource)} is the short form with every default. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /**
     * Launches a message on the global scope in its own transaction: every saga registered for the topic runs
     * it, as the root of a new hierarchy.
     */
    public <P> MessageId launch(Topic<P> topic, P payload) {
        return launch(topic, payload, CooperationContext.empty(), null);
    }

    /** Launches a message as {@link #launch(Topic, Object)} whose runs start with {@code context}. */
    public <P> MessageId launch(Topic<P> topic, P payload, CooperationContext context) {
        return launch(topic, payload, context, null);
    }

    /**
     * Launches a message now whose runs start at {@code at} (by the engine's time, see {@link TimeSource}), not before:
     * a delayed launch. The message exists at once (it can be cancelled or inspected); the wait holds no thread.
     */
    public <P> MessageId launch(Topic<P> topic, P payload, Instant at) {
        return launch(topic, payload, CooperationContext.empty(), Objects.requireNonNull(at, "at"));
    }

    /** Launches a message with a context, whose runs start at {@code at} (null: at once). */
    public <P> MessageId launch(Topic<P> topic, P payload, CooperationContext context, Instant at) {
        return launch(topic, payload, Launches.options(context, at));
    }

    /**
     * Launches a message on the global scope in its own transaction, as {@link #launch(Topic, Object)}, with the
     * given options: an idempotency key, a priority, an ordering key, a start time, context.
     *
     * @return the message's id; with an idempotency key that a message of the topic already holds, that message's
     *         id, and nothing is launched (also when the two launches race from different connections)
     */
    public <P> MessageId launch(Topic<P> topic, P payload, LaunchOptions options) {
        return launches.launch(topic, payload, options);
    }

    /**
     * Launches a message on the global scope inside the caller's transaction (the outbox pattern): it exists, and
     * runs, only if the caller commits.
     */
    public <P> MessageId launch(Connection connection, Topic<P> topic, P payload) {
        return launch(connection, topic, payload, CooperationContext.empty(), null);
    }

    /**
     * Launches a message inside the caller's transaction, with a context and a start time (null: at once); see
     * {@link #launch(Connection, Topic, Object)}.
     */
    public <P> MessageId launch(Connection connection, Topic<P> topic, P payload, CooperationContext context,
            Instant at) {
        return launch(connection, topic, payload, Launches.options(context, at));
    }

    /**
     * Launches a message inside the caller's transaction with the given options; see
     * {@link #launch(Connection, Topic, Object)} and {@link #launch(Topic, Object, LaunchOptions)}. With an
     * idempotency key or an ordering key the transaction must be {@code READ COMMITTED} (PostgreSQL's default): a
     * launch of the same key in flight elsewhere is waited for, then seen.
     */
    public <P> MessageId launch(Connection connection, Topic<P> topic, P payload, LaunchOptions options) {
        return launches.launch(connection, topic, payload, options);
    }

    /**
     * Waits until every run of the message, and so everything those runs caused, finished.
     *
     * @throws dev.coop.failure.CoopTimeoutException when that takes longer than {@code timeout}
     * @throws dev.coop.failure.CoopValidationException when no such message exists
     */
    public Outcome awaitCompletion(MessageId message, Duration timeout) {
        return completionWait.await(message, timeout);
    }

    /**
     * The time Coop compares due times and deadlines with: the client's {@link TimeSource} if it has one, otherwise
     * the database's clock. Use it to compute instants for {@link #launch(Topic, Object, Instant)} and deadlines
     * when the JVM's clock may differ.
     */
    public Instant now() {
        return reads.now();
    }

    /**
     * The same as {@link #now()}.
     *
     * @deprecated use {@link #now()}, which also follows a client's {@link TimeSource}
     */
    @Deprecated
    public Instant databaseTime() {
        return now();
    }

    /**
     * What the runs of a message returned: one per saga that handles it. A run that did not commit has no result
     * and says why.
     */
    public List<RunResult> results(MessageId message) {
        return reads.results(message);
    }

    /**
     * The result of the one run of a message, read as {@code type}.
     *
     * @throws RunResult.NoResultException when the run did not commit (the message says why) or set no result
     * @throws dev.coop.failure.CoopValidationException when several sagas handle the message (use {@link #results})
     */
    public <T> T result(MessageId message, Class<T> type) {
        return reads.result(message, type);
    }

    /**
     * The payload a message was launched with, as stored (JSON text), for inspection: steps read it typed.
     *
     * @throws dev.coop.failure.CoopValidationException when there is no such message
     */
    public String payloadJson(MessageId message) {
        return reads.payloadJson(message);
    }

    /**
     * What a run returned ({@link RunResult}), as stored (JSON text); null when it returned nothing, or not yet.
     *
     * @throws dev.coop.failure.CoopValidationException when there is no such run
     */
    public String resultJson(UUID runId) {
        return reads.resultJson(runId);
    }

    /** The status of every run of a message (one per saga that handles it). */
    public List<RunStatus> statuses(MessageId message) {
        return reads.statuses(message);
    }

    /**
     * One page of the event log of the hierarchy below a message, in the order it was written: the events whose id is
     * above {@code afterId} (0 for the first page), at most {@code limit} (1 to 100,000). The next page starts after
     * the last id of this one; an empty page is the end. Use it for hierarchies too large to read at once.
     */
    public List<Event> events(MessageId message, long afterId, int limit) {
        return reads.events(message, afterId, limit);
    }

    /**
     * The event log of the hierarchy below a message, in the order it was written, whole: at most
     * {@value #MAX_EVENTS_AT_ONCE} events. A larger log is refused with a
     * {@link dev.coop.failure.CoopValidationException} (having read no more than one event past the bound) that says to
     * read it in pages with {@link #events(MessageId, long, int)}, so that no call loads an unbounded log into memory
     * and none returns part of it as if it were all.
     */
    public List<Event> events(MessageId message) {
        return reads.events(message);
    }

    /**
     * Asks every run of the message, and everything they caused, to give up: each gives up at its next step
     * boundary (a step already running finishes its code, then its transaction rolls back) and rolls back, running
     * its compensations. Parked runs in the scope roll back too.
     */
    public CancelResult cancel(MessageId message, String reason) {
        return actions.cancel(message, reason);
    }

    /** Like {@link #cancel(MessageId, String)} for one run's scope: the run and everything below it. */
    public CancelResult cancel(Lineage scope, String reason) {
        return actions.cancel(scope, reason);
    }

    /**
     * Undoes a finished hierarchy: every (committed) run of the message rolls back its whole history, children
     * first, running compensations. Refused, with a {@link dev.coop.failure.CoopValidationException}, while anything in
     * the scope or above it still runs, or when it already rolled back.
     */
    public void rollback(MessageId message, String reason) {
        actions.rollback(message, reason);
    }

    /**
     * Cancels every unfinished run (runnable, waiting, parked or held, not already rolling back) that the selection
     * matches, whatever its limit, as {@link #cancel(Lineage, String)} would each run's scope: the run and everything
     * below it give up and roll back; a selected child's parent then handles its failure as its saga says. In batches
     * of 1,000 runs, each its own transaction, so a large selection never holds one transaction; a
     * {@code CANCELLATION_REQUESTED} event per run and an audit entry per hierarchy and batch (action
     * {@code cancel-selection}, {@code actor}, {@code reason}, how many of its runs, the selection). The selection
     * names a saga, a topic, a business key or a tag; {@link #countRuns(RunQuery)} says how many runs it holds
     * beforehand (a dry run).
     *
     * @return how many runs were asked to give up (runs cancelled before are not counted again)
     */
    public long cancel(RunQuery selection, String actor, String reason) {
        return actions.actOn(selection, actor, reason, true);
    }

    /**
     * Undoes every committed run that the selection matches, whatever its limit, as {@link #rollback(Lineage, String)}
     * would each run's scope (children first, running compensations), in batches of 1,000 runs like
     * {@link #cancel(RunQuery, String, String)} (action {@code rollback-selection} in the audit). Unlike the single
     * rollback, runs it cannot undo now are left as they are instead of refusing the whole: a run with something
     * running in its scope or above it, and a run whose selected ancestor's rollback undoes it anyway.
     *
     * @return how many runs were asked to roll back
     */
    public long rollback(RunQuery selection, String actor, String reason) {
        return actions.actOn(selection, actor, reason, false);
    }

    /**
     * Undoes one finished run and what it caused (a subtree). Use with care: the rest of the hierarchy stays
     * committed.
     */
    public void rollback(Lineage scope, String reason) {
        actions.rollback(scope, reason);
    }

    /**
     * How many runs are {@code RUNNABLE}, {@code WAITING} and {@code PARKED} right now (each status present, zero
     * when none): cheap, it reads only the index of unfinished runs, never the history.
     */
    public Map<RunStatus, Long> unfinishedRuns() {
        return reads.unfinishedRuns();
    }

    /**
     * Counts over time: per saga and minute of the database's clock, how many runs were launched, committed, rolled
     * back, failed to roll back and were parked, for the minutes that began at most {@code window} ago (at most 7
     * days), oldest minute first; minutes without any are absent. Read from a rollup the database keeps as runs are
     * launched and finish (a few rows per saga and minute), never from the log; retention deletes the minutes it
     * prunes past.
     */
    public List<dev.coop.inspect.RunCount> counts(Duration window) {
        return reads.counts(window);
    }

    /** Parked runs, oldest first, at most {@code limit}. */
    public List<ParkedRun> parkedRuns(int limit) {
        return actions.parkedRuns(limit);
    }

    /** Retries a parked run's step now, from attempt 1. False when the run is not parked. */
    public boolean retryNow(UUID runId) {
        return actions.retryNow(runId);
    }

    /**
     * The messages {@code text} names, newest first, at most 100: the message with that id, the messages launched
     * with that idempotency key (of topics a saga is registered for, whatever the topic), business key or tag, and
     * the hierarchies holding an external task of that key or token. Each match says what it matched by; a message
     * matched two ways is listed once. Text with control characters is refused
     * ({@link dev.coop.failure.CoopValidationException}).
     */
    public List<dev.coop.inspect.MessageMatch> search(String text) {
        return reads.search(text, null, 100);
    }

    /**
     * The next page of {@link #search(String)}: the matches launched strictly before {@code before} (the
     * {@code launchedAt} of the last match seen; null: the first page), newest first, at most {@code limit} (1 to
     * 100).
     */
    public List<dev.coop.inspect.MessageMatch> search(String text, java.time.OffsetDateTime before, int limit) {
        return reads.search(text, before, limit);
    }

    /** How many runs of {@code saga} are parked now (what {@link #retryParked} would retry). */
    public long countParked(String saga) {
        return actions.countParked(saga);
    }

    /**
     * Retries every parked run of {@code saga} now, from attempt 1, in batches of 1,000 runs, each batch one
     * transaction: a {@code RETRIED} event per run, and an audit entry per hierarchy (action {@code retry-parked},
     * {@code actor}, {@code reason}, how many of its runs). Runs parked again while it works are not retried twice.
     *
     * @return how many runs it retried
     */
    public long retryParked(String saga, String actor, String reason) {
        return actions.retryParked(saga, actor, reason);
    }

    /** Treats a parked run's step as done without running it; the run goes on. False when it is not parked. */
    public boolean markStepDone(UUID runId) {
        return actions.markStepDone(runId);
    }

    /**
     * {@link #retryNow(UUID)} for the run of a lineage; a lineage that is not its run's own (another hierarchy's
     * root, say) is refused with a {@link dev.coop.failure.CoopValidationException}, so that what is recorded about the
     * action (an audit entry under the lineage's root) names the hierarchy it changed.
     */
    public boolean retryNow(Lineage run) {
        return actions.retryNow(run);
    }

    /** {@link #markStepDone(UUID)} for the run of a lineage, refused like {@link #retryNow(Lineage)}. */
    public boolean markStepDone(Lineage run) {
        return actions.markStepDone(run);
    }

    /**
     * Completes the external task a token or correlation key names with {@code result}, which the parent's next step
     * reads like a child's result ({@link StepContext#taskResult(String, Class)}). One statement, committed as it
     * returns (one round trip): the task's run is counted off at its parent, which continues (in whichever engine
     * claims it) when it waits for nothing else. A task opened by its run's last step, whose completion may finish the
     * run, is completed in a transaction (three round trips: the first statement finds it so).
     *
     * @return {@link TaskOutcome#ALREADY_SETTLED} when the task was completed before with an equal result
     * @throws dev.coop.failure.TaskRefusedException when it was settled otherwise (another result, failed, timed out,
     *         cancelled, compensated); the message names the first settlement
     * @throws dev.coop.failure.CoopValidationException for a malformed token or key, one no task has, or a result over
     *         the payload limit
     */
    public TaskOutcome complete(String tokenOrKey, Object result) {
        return complete(tokenOrKey, result, TaskSettlement.CLIENT);
    }

    /** As {@link #complete(String, Object)}, recording who completed it ({@code actor}, 1-200 characters). */
    public TaskOutcome complete(String tokenOrKey, Object result, String actor) {
        return tasks.complete(tokenOrKey, result, actor);
    }

    /**
     * Completes an external task in the caller's transaction ({@code connection}, not committed here): nothing
     * happens if it rolls back. The parent is woken by the database's notification when it commits.
     */
    public TaskOutcome complete(Connection connection, String tokenOrKey, Object result) {
        return tasks.complete(connection, tokenOrKey, result);
    }

    /**
     * Fails the external task a token or correlation key names: a child failure of the step that opened it (its
     * child-failure handler may recover, retry or choose the next step; otherwise the run rolls back with this
     * failure, type {@code dev.coop.failure.ExternalTaskFailedException}, in its distributed stack trace).
     * Idempotent like {@link #complete(String, Object)}: the same reason again is a no-op.
     */
    public TaskOutcome fail(String tokenOrKey, String reason) {
        return fail(tokenOrKey, reason, TaskSettlement.CLIENT);
    }

    /** As {@link #fail(String, String)}, recording who failed it ({@code actor}, 1-200 characters). */
    public TaskOutcome fail(String tokenOrKey, String reason, String actor) {
        return tasks.fail(tokenOrKey, reason, actor);
    }

    /** Fails an external task in the caller's transaction; see {@link #complete(Connection, String, Object)}. */
    public TaskOutcome fail(Connection connection, String tokenOrKey, String reason) {
        return tasks.fail(connection, tokenOrKey, reason);
    }

    /**
     * The external task a token names, or the open task holding a correlation key (else the latest that held it):
     * its state tells the outside world whether to go on (a task that timed out or was cancelled need not be done).
     */
    public Optional<TaskView> externalTask(String tokenOrKey) {
        return tasks.externalTask(tokenOrKey);
    }

    /** Open external tasks, oldest first, at most {@code limit} (1 to 10,000). */
    public List<TaskView> openTasks(int limit) {
        return openTasks(null, limit);
    }

    /** Open external tasks named {@code name} (null: any), oldest first, at most {@code limit} (1 to 10,000). */
    public List<TaskView> openTasks(String name, int limit) {
        return tasks.openTasks(name, limit);
    }

    /**
     * Sends a signal to {@code key}: the step waiting for it ({@link StepContext#awaitSignal(String, String)}) gets
     * {@code payload} as its task's result and its run goes on; when no step waits for the key yet, the signal is kept
     * for {@code keepFor} (1 ms to 100 years) and the next step that waits for the key takes it at once. One signal
     * completes one waiting step; several signals to one key are taken oldest first.
     */
    public SignalOutcome signal(String key, Object payload, Duration keepFor) {
        return tasks.signal(key, payload, keepFor);
    }

    /** Open external tasks by name, with when the oldest of each was opened (for metrics and dashboards). */
    public List<dev.coop.inspect.OpenTaskCount> openTaskCounts() {
        return tasks.openTaskCounts();
    }

    /**
     * The cooperation tree below a message: every run that handled it, their steps (with start and end times, what
     * each launched, and failures with their full cause chains), and recursively the runs those steps caused.
     * Read within bounds: in a tree of more than 5,000 runs, a run that caused more than 100 runs has them counted
     * per saga and status ({@link RunView#collapsed()}) and lists only those that did not commit (at most 100);
     * see docs/inspection.md for what such a read leaves out.
     */
    public Hierarchy tree(MessageId message) {
        return reads.tree(message);
    }

    /**
     * The cooperation tree below one run (a subtree), read within the same bounds as {@link #tree(MessageId)}; only
     * the subtree's own runs and events are read, however large the rest of its hierarchy. The run is named by its
     * lineage, refused when that is not the run's own, or by its id alone (a lineage of one element).
     */
    public RunView tree(Lineage run) {
        return reads.tree(run);
    }

    /** Runs, newest first, filtered by status, saga, topic and age; one page of at most {@code query.limit()}. */
    public List<RunSummary> runs(RunQuery query) {
        return reads.runs(query);
    }

    /**
     * How many runs match the query's status, saga, topic and age, by status (its limit and page do not apply;
     * statuses with no run are absent).
     */
    public Map<RunStatus, Long> countRuns(RunQuery query) {
        return reads.countRuns(query);
    }

    /**
     * Records who took an operator action on a hierarchy, why, and what came of it, for {@link #audit(MessageId)}.
     * Tools that act for people (the dashboard) call it after each cancel, roll back, retry or mark-done.
     *
     * @param message the root message of the hierarchy
     * @param scope the run acted on, or null for the whole message
     * @param action what was asked (1 to 100 characters)
     * @param actor who asked (1 to 200 characters)
     * @param reason why (required, as for {@link #cancel(MessageId, String)})
     * @param outcome what came of it (at most 2,000 characters; longer is cut)
     */
    public AuditEntry recordAudit(MessageId message, Lineage scope, String action, String actor, String reason,
            String outcome) {
        return actions.recordAudit(message, scope, action, actor, reason, outcome);
    }

    /** The audit entries of a hierarchy (by its root message), oldest first, at most 1,000. */
    public List<AuditEntry> audit(MessageId message) {
        return actions.audit(message);
    }

    /**
     * Deletes every hierarchy whose root message's runs all finished more than {@code olderThan} ago (database time)
     * and of which no run is runnable (also sleeping or due to retry), waiting or parked: its messages, events, runs
     * and cancellations, whole, in one transaction per {@value dev.coop.internal.retention.Retention#BATCH}
     * hierarchies. A hierarchy an operator is acting on at that moment is left for the next time. What is deleted is
     * gone from trees, logs, results and listings; a join that counted one of its messages keeps its counters, and a
     * message id attached to a join afterwards stays pending until reported. Engines do the same by themselves with
     * {@link CoopEngine.Builder#retention(Duration)}.
     *
     * @param olderThan zero or positive; zero deletes every finished hierarchy
     */
    public PruneResult prune(Duration olderThan) {
        return housekeeping.prune(olderThan);
    }

    /** What {@link #prune(Duration)} would delete now: how many hierarchies, and a sample of their roots. */
    public PruneResult pruneDryRun(Duration olderThan) {
        return housekeeping.pruneDryRun(olderThan);
    }

    /**
     * Removes a saga, every version of it, from the topology registry: messages launched from now on no longer wait
     * for it. Runs already created for it still run when an engine that has the saga (in their version) is up; unlike
     * {@link #retireSagaVersion}, this does not check for unfinished runs.
     *
     * @return false when no saga of that name was registered
     */
    public boolean retireSaga(String saga) {
        return housekeeping.retireSaga(saga);
    }

    /**
     * Removes one version of a saga from the topology registry once none of its runs is unfinished (a drained rolling
     * deploy: no engine needs to keep that version any more). New runs get the highest version left; retiring the
     * last version retires the saga. Engines that start with the version register it again.
     *
     * @return false when that version of the saga is not registered
     * @throws dev.coop.failure.CoopValidationException while runs of that version are unfinished (runnable, waiting,
     *         sleeping, parked or rolling back): the message says how many, by status
     */
    public boolean retireSagaVersion(String saga, int version) {
        return housekeeping.retireSagaVersion(saga, version);
    }

    /**
     * The saga versions: every registered one (which one new runs get, how many of its runs are unfinished, which
     * running engines have it), and any version with unfinished runs that is not registered any more. A version
     * whose runs wait with no running engine that has it is {@link SagaVersionSummary#stranded() stranded}.
     */
    public List<SagaVersionSummary> sagaVersions() {
        return housekeeping.sagaVersions();
    }

    /**
     * Creates or replaces the schedule {@code name}: at each of its times an engine launches {@code payload} on
     * {@code topic} on the global scope. Idempotent: declaring the same schedule again (at every start of a service)
     * keeps its next due time; changing its times makes it due again from now. See {@link Schedule} for overlap and
     * missed periods.
     *
     * @param name 1 to 200 letters, digits or {@code . _ - : /}, starting with a letter or digit
     */
    public <P> ScheduleSummary schedule(String name, Topic<P> topic, P payload, Schedule schedule) {
        return schedules.schedule(name, topic, payload, schedule);
    }

    /** Like {@link #schedule(String, Topic, Object, Schedule)}, inside the caller's transaction. */
    public <P> ScheduleSummary schedule(Connection connection, String name, Topic<P> topic, P payload,
            Schedule schedule) {
        return schedules.schedule(connection, name, topic, payload, schedule);
    }

    /** Removes a schedule. Messages it launched already go on (cancel them to stop them). */
    public void unschedule(String name) {
        schedules.unschedule(name);
    }

    /** Every schedule, by name, with its next due time and the last message it launched. */
    public List<ScheduleSummary> schedules() {
        return schedules.schedules();
    }

    /** Joins: a fan-in for code outside sagas (start, attach, report, inspect), on this client's database. */
    public Joins joins() {
        return new dev.coop.internal.join.JoinService(client.dataSource(), client.store(), client.json());
    }

    /**
     * Settings of a client; each is validated as it is set. They are the {@linkplain ClientSettings settings every
     * client has}, which an engine's builder has too.
     */
    public static final class Builder extends ClientSettings<Builder> {
        private Builder(DataSource dataSource) {
            super(dataSource);
        }

        /** Migrates (unless turned off) and builds the client. */
        public CoopClient build() {
            SchemaName schema = migratedSchema();
            return new CoopClient(boundedDataSource(), schema, json(), new Completions(), (saga, runs) -> {
            }, false, requiresHandlers(), time(), listeners());
        }
    }
}
