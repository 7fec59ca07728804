package dev.coop;

import dev.coop.failure.CoopException;
import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopTimeoutException;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.AuditEntry;
import dev.coop.inspect.Event;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.SagaVersionSummary;
import dev.coop.inspect.TaskView;
import dev.coop.inspect.RunView;
import dev.coop.join.Joins;
import dev.coop.schedule.Schedule;
import dev.coop.schedule.ScheduleSummary;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.internal.inspect.AuditLog;
import dev.coop.internal.Completions;
import dev.coop.internal.store.Emission;
import dev.coop.internal.store.Limits;
import dev.coop.internal.Listeners;
import dev.coop.internal.EngineRuntime;
import dev.coop.internal.inspect.Inspection;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.Migrations;
import dev.coop.internal.inspect.Operations;
import dev.coop.internal.retention.Retention;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.schedule.Schedules;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Emitted;
import dev.coop.internal.task.TaskSettlement;
import dev.coop.internal.store.Time;
import dev.coop.internal.Topology;
import dev.coop.internal.store.Tx;
import dev.coop.internal.store.Uuids;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * Launches messages and inspects what became of them. Talks only to the database: it works without an engine in
 * this JVM ({@link Coop#client(DataSource)}), and every engine has one ({@link CoopEngine#client()}). Thread-safe.
 */
public final class CoopClient {
    /** The most events {@link #events(MessageId)} returns; larger logs are read in pages. */
    public static final int MAX_EVENTS_AT_ONCE = 10_000;

    private static final long MAX_CHECK_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /** An engine's client is signalled when its own runs finish; it polls only for runs finished elsewhere. */
    private static final long FIRST_PAUSE_SIGNALLED_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /**
     * An engine's client re-checks the database only as a backstop, for runs that finish in other engines: every
     * pool connection a waiting client borrows is one the engine's workers cannot use.
     */
    private static final long MAX_CHECK_PAUSE_SIGNALLED_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

    private final DataSource dataSource;
    private final Store store;
    /** For launches in the client's own transaction, which wake the engine's sagas in-process after the commit. */
    private final Store launchStore;
    private final boolean requireHandlers;
    private final Topology topology;
    private final Operations operations;
    private final Inspection inspection;
    private final dev.coop.internal.store.RunData runData;
    private final dev.coop.internal.inspect.BulkActions bulk;
    private final dev.coop.internal.inspect.Search search;
    private final dev.coop.internal.inspect.RunCounts counts;
    private final dev.coop.internal.inspect.SelectionActions selections;
    private final Schedules schedules;
    private final AuditLog audit;
    private final Json json;
    private final Completions completions;
    /** Wakes the engine this client belongs to: a saga and how many of its runs became due (0: not known). */
    private final java.util.function.ObjIntConsumer<String> localWake;
    /** Whether this client learns the outcome of messages it launched from the engine it belongs to. */
    private final boolean inProcessOutcomes;
    private final long firstPauseNanos;
    private final long maxPauseNanos;
    private final Time time;
    private final Listeners listeners;
    private final TaskSettlement tasks;

    CoopClient(DataSource dataSource, SchemaName schema, Json json, Completions completions,
            java.util.function.ObjIntConsumer<String> localWake, boolean signalled, boolean requireHandlers, Time time,
            Listeners listeners) {
        this(dataSource, schema, json, completions, localWake, signalled, requireHandlers, time, java.util.Set.of(),
                listeners);
    }

    /** @param localSagas the sagas {@code localWake} wakes (an engine's own): launching them notifies nobody */
    CoopClient(DataSource dataSource, SchemaName schema, Json json, Completions completions,
            java.util.function.ObjIntConsumer<String> localWake, boolean signalled, boolean requireHandlers, Time time,
            java.util.Set<String> localSagas, Listeners listeners) {
        this.dataSource = dataSource;
        this.time = time;
        this.store = new Store(schema, requireHandlers, time);
        this.launchStore = new Store(schema, requireHandlers, time, localSagas);
        this.requireHandlers = requireHandlers;
        this.topology = new Topology(schema);
        this.operations = new Operations(schema, time);
        this.inspection = new Inspection(schema);
        this.runData = new dev.coop.internal.store.RunData(schema);
        this.bulk = new dev.coop.internal.inspect.BulkActions(schema, store.time());
        this.search = new dev.coop.internal.inspect.Search(schema);
        this.counts = new dev.coop.internal.inspect.RunCounts(schema);
        this.selections = new dev.coop.internal.inspect.SelectionActions(schema, store.time());
        this.schedules = new Schedules(schema, time);
        this.audit = new AuditLog(schema);
        this.tasks = new TaskSettlement(schema, time, json);
        this.json = json;
        this.completions = completions;
        this.localWake = localWake;
        this.listeners = listeners;
        this.inProcessOutcomes = signalled;
        this.firstPauseNanos = signalled ? FIRST_PAUSE_SIGNALLED_NANOS : TimeUnit.MILLISECONDS.toNanos(1);
        this.maxPauseNanos = signalled ? MAX_CHECK_PAUSE_SIGNALLED_NANOS : MAX_CHECK_PAUSE_NANOS;
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
     * Launches a message now whose runs start at {@code at} (by the engine's time, see {@link TimeSource}), not before: a delayed
     * launch. The message exists at once (it can be cancelled or inspected); the wait holds no thread.
     */
    public <P> MessageId launch(Topic<P> topic, P payload, Instant at) {
        return launch(topic, payload, CooperationContext.empty(), Objects.requireNonNull(at, "at"));
    }

    /** Launches a message with a context, whose runs start at {@code at} (null: at once). */
    public <P> MessageId launch(Topic<P> topic, P payload, CooperationContext context, Instant at) {
        return launch(topic, payload, options(context, at));
    }

    /**
     * Launches a message on the global scope in its own transaction, as {@link #launch(Topic, Object)}, with the
     * given options: an idempotency key, a priority, an ordering key, a start time, context.
     *
     * @return the message's id; with an idempotency key that a message of the topic already holds, that message's
     *         id, and nothing is launched (also when the two launches race from different connections)
     */
    public <P> MessageId launch(Topic<P> topic, P payload, LaunchOptions options) {
        Emission emission = emission(topic, payload, options);
        String what = "launch a message on topic '" + topic.name() + "'";
        Tx.Work<Launched> emit = c -> launch(c, launchStore, emission);
        // one statement: without strict topics nothing can refuse it afterwards, so it commits by itself (one round
        // trip); strict topics check the result and roll the launch back when no saga handles the topic. A key taken
        // by another message is looked up by a second statement, which sees the holder: the emit waited for it
        UUID id = emission.messageId();
        if (inProcessOutcomes) {
            completions.track(id); // before the commit: its runs may finish here before launch returns
        }
        Launched launched;
        try {
            launched = requireHandlers
                    ? inTransaction(what, emit)
                    : Tx.oneStatement(dataSource, what, emit);
        } catch (RuntimeException | Error e) {
            completions.untrack(id);
            throw e;
        }
        if (inProcessOutcomes) {
            if (launched.id().equals(id) && !launched.created().isEmpty()) {
                completions.launched(id, launched.created().keySet());
            } else {
                completions.untrack(id); // an idempotent launch found its key taken, or nobody handles the topic
            }
        }
        launched.created().forEach(localWake::accept);
        return new MessageId(launched.id());
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
        return launch(connection, topic, payload, options(context, at));
    }

    /**
     * Launches a message inside the caller's transaction with the given options; see
     * {@link #launch(Connection, Topic, Object)} and {@link #launch(Topic, Object, LaunchOptions)}. With an
     * idempotency key or an ordering key the transaction must be {@code READ COMMITTED} (PostgreSQL's default): a
     * launch of the same key in flight elsewhere is waited for, then seen.
     */
    public <P> MessageId launch(Connection connection, Topic<P> topic, P payload, LaunchOptions options) {
        Objects.requireNonNull(connection, "connection");
        Emission emission = emission(topic, payload, options);
        try {
            return new MessageId(launch(connection, store, emission).id());
        } catch (SQLException e) {
            throw new CoopStoreException("Could not launch a message on topic '" + topic.name() + "': "
                    + e.getMessage(), e);
        }
    }

    private static LaunchOptions options(CooperationContext context, Instant at) {
        LaunchOptions options = LaunchOptions.none().context(Objects.requireNonNull(context, "context"));
        return at == null ? options : options.at(at);
    }

    /** A launch's message (the one written, or the one holding its idempotency key) and the runs created. */
    private record Launched(UUID id, Map<String, Integer> created) {
    }

    private static Launched launch(Connection c, Store store, Emission emission) throws SQLException {
        for (int attempt = 0;; attempt++) {
            Emitted emitted = store.emitAll(c, null, null, null, null, null, null, List.of(emission));
            if (emitted.duplicates().isEmpty()) {
                return new Launched(emission.messageId(), emitted.created());
            }
            // the emit waited for a launch of the key in flight; this new statement sees it committed
            UUID holder = store.messageWithKey(c, emission.topic(), emission.idempotencyKey());
            if (holder != null || attempt == 2) {
                if (holder == null) {
                    throw new SQLException("The idempotency key '" + emission.idempotencyKey() + "' of topic '"
                            + emission.topic() + "' is held by a message that cannot be read", Store.KEY_TAKEN);
                }
                return new Launched(holder, Map.of());
            }
            // the holder was deleted (retention) between the two statements: launch again
        }
    }

    private <P> Emission emission(Topic<P> topic, P payload, LaunchOptions options) {
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(options, "options");
        CooperationContext context = options.context();
        if (!listeners.isEmpty()) {
            context = listeners.launching(topic.name(), context);
        }
        json.checkLaunchContext(context);
        return new Emission(Uuids.v7(), topic.name(), json.writePayload(topic, payload),
                json.writeContext(context.withMapper(json.mapper())),
                options.at().map(at -> at.atOffset(ZoneOffset.UTC)).orElse(null),
                options.idempotencyKey().orElse(null), options.priority(), options.orderingKey().orElse(null),
                options.businessKey().orElse(null), options.tags());
    }

    /**
     * Waits until every run of the message, and so everything those runs caused, finished.
     *
     * @throws CoopTimeoutException when that takes longer than {@code timeout}
     * @throws CoopValidationException when no such message exists
     */
    public Outcome awaitCompletion(MessageId message, Duration timeout) {
        Objects.requireNonNull(message, "message");
        long deadline = System.nanoTime() + Limits.timeoutNanos(Objects.requireNonNull(timeout, "timeout"));
        long pause = firstPauseNanos;
        UUID id = message.value();
        // launched by this client and its runs all run here: the first look is the completion signal's, not a read
        boolean tracked = inProcessOutcomes && completions.tracks(id);
        boolean local = tracked;
        try (Completions.Waiter waiter = completions.watch(id)) {
            CoopStoreException trouble = null;
            while (true) {
                long seen = waiter.version();
                List<RunStatus> statuses = tracked ? completions.outcome(id) : null;
                if (statuses == null && !local) {
                    try {
                        statuses = statuses(message);
                        trouble = null;
                    } catch (CoopStoreException e) { // the database is away (a restart, say): keep waiting
                        trouble = e;
                    }
                }
                local = false; // after the first wait, read the database too (runs may finish in other engines)
                if (statuses != null && statuses.stream().allMatch(RunStatus::isFinished)) {
                    completions.untrack(id);
                    return Outcome.of(statuses);
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw timedOut(message, timeout, trouble);
                }
                waiter.await(seen, Math.min(pause, left));
                pause = Math.min(pause * 2, maxPauseNanos);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CoopException("Interrupted while waiting for message " + message, e);
        }
    }

    private CoopTimeoutException timedOut(MessageId message, Duration timeout, CoopStoreException trouble) {
        String why;
        if (trouble != null) {
            why = "the database could not be read (" + trouble.getMessage() + ")";
        } else {
            try (Connection c = dataSource.getConnection()) {
                why = inspection.whyUnfinished(c, message);
            } catch (SQLException | RuntimeException e) {
                why = "its runs are still running";
            }
        }
        CoopTimeoutException e = new CoopTimeoutException(
                "Message " + message + " did not finish within " + timeout + ": " + why);
        if (trouble != null) {
            e.initCause(trouble);
        }
        return e;
    }

    /**
     * The time Coop compares due times and deadlines with: the client's {@link TimeSource} if it has one, otherwise
     * the database's clock. Use it to compute instants for {@link #launch(Topic, Object, Instant)} and deadlines
     * when the JVM's clock may differ.
     */
    public Instant now() {
        if (time.controlled()) {
            return time.bind().toInstant();
        }
        try (Connection c = dataSource.getConnection()) {
            return time.now(c);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not read the database's clock: " + e.getMessage(), e);
        }
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
        Objects.requireNonNull(message, "message");
        try (Connection c = dataSource.getConnection()) {
            List<RunResult> results = store.results(c, message, json.mapper());
            if (results.isEmpty() && !store.messageExists(c, message)) {
                throw new CoopValidationException("No message " + message + " in schema '"
                        + store.schema().value() + "'");
            }
            return results;
        } catch (SQLException e) {
            throw new CoopStoreException("Could not read the results of message " + message + ": " + e.getMessage(),
                    e);
        }
    }

    /**
     * The result of the one run of a message, read as {@code type}.
     *
     * @throws RunResult.NoResultException when the run did not commit (the message says why) or set no result
     * @throws CoopValidationException when several sagas handle the message (use {@link #results})
     */
    public <T> T result(MessageId message, Class<T> type) {
        List<RunResult> results = results(message);
        if (results.size() != 1) {
            throw new CoopValidationException("Message " + message + " has " + results.size() + " runs "
                    + results.stream().map(RunResult::saga).toList() + "; read them with results()");
        }
        return results.getFirst().get(type);
    }

    /**
     * The payload a message was launched with, as stored (JSON text), for inspection: steps read it typed.
     *
     * @throws CoopValidationException when there is no such message
     */
    public String payloadJson(MessageId message) {
        Objects.requireNonNull(message, "message");
        return inTransaction("read the payload of message " + message, c -> runData.payload(c, message));
    }

    /**
     * What a run returned ({@link RunResult}), as stored (JSON text); null when it returned nothing, or not yet.
     *
     * @throws CoopValidationException when there is no such run
     */
    public String resultJson(UUID runId) {
        Objects.requireNonNull(runId, "runId");
        return inTransaction("read the result of run " + runId, c -> runData.result(c, runId));
    }

    /** The status of every run of a message (one per saga that handles it). */
    public List<RunStatus> statuses(MessageId message) {
        try (Connection c = dataSource.getConnection()) {
            List<RunStatus> statuses = store.runStatuses(c, message);
            if (statuses.isEmpty() && !store.messageExists(c, message)) {
                throw new CoopValidationException("No message " + message + " in schema '"
                        + store.schema().value() + "'");
            }
            return statuses;
        } catch (SQLException e) {
            throw new CoopStoreException(
                    "Could not read the runs of message " + message + ": " + e.getMessage(), e);
        }
    }

    /**
     * One page of the event log of the hierarchy below a message, in the order it was written: the events whose id is
     * above {@code afterId} (0 for the first page), at most {@code limit} (1 to 100,000). The next page starts after
     * the last id of this one; an empty page is the end. Use it for hierarchies too large to read at once.
     */
    public List<Event> events(MessageId message, long afterId, int limit) {
        Objects.requireNonNull(message, "message");
        if (limit < 1 || limit > 100_000 || afterId < 0) {
            throw new CoopValidationException("An event page needs afterId >= 0 and a limit of 1 to 100000, was "
                    + afterId + " and " + limit);
        }
        try (Connection c = dataSource.getConnection()) {
            List<Event> events = store.events(c, message, afterId, limit);
            if (events.isEmpty() && afterId == 0 && !store.messageExists(c, message)) {
                throw new CoopValidationException("No message " + message + " in schema '"
                        + store.schema().value() + "'");
            }
            return events;
        } catch (SQLException e) {
            throw new CoopStoreException("Could not read the events of message " + message + ": " + e.getMessage(),
                    e);
        }
    }

    /**
     * The event log of the hierarchy below a message, in the order it was written, whole: at most
     * {@value #MAX_EVENTS_AT_ONCE} events. A larger log is refused with a {@link CoopValidationException} (having read no
     * more than one event past the bound) that says to read it in pages with {@link #events(MessageId, long, int)}, so
     * that no call loads an unbounded log into memory and none returns part of it as if it were all.
     */
    public List<Event> events(MessageId message) {
        Objects.requireNonNull(message, "message");
        List<Event> events = events(message, 0, MAX_EVENTS_AT_ONCE + 1);
        if (events.size() > MAX_EVENTS_AT_ONCE) {
            throw new CoopValidationException("The hierarchy of message " + message + " has more than "
                    + MAX_EVENTS_AT_ONCE + " events: read them in pages with events(message, afterId, limit)"
                    + " (coop events --after <id> --limit <n>)");
        }
        return events;
    }

    /**
     * Asks every run of the message, and everything they caused, to give up: each gives up at its next step
     * boundary (a step already running finishes its code, then its transaction rolls back) and rolls back, running
     * its compensations. Parked runs in the scope roll back too.
     */
    public CancelResult cancel(MessageId message, String reason) {
        Objects.requireNonNull(message, "message");
        return inTransaction("cancel message " + message, c -> operations.cancel(c, message, null, reason(reason)));
    }

    /** Like {@link #cancel(MessageId, String)} for one run's scope: the run and everything below it. */
    public CancelResult cancel(Lineage scope, String reason) {
        Objects.requireNonNull(scope, "scope");
        return inTransaction("cancel scope " + scope, c -> operations.cancel(c, null, scope, reason(reason)));
    }

    /**
     * Undoes a finished hierarchy: every (committed) run of the message rolls back its whole history, children
     * first, running compensations. Refused, with a {@link CoopValidationException}, while anything in the scope or
     * above it still runs, or when it already rolled back.
     */
    public void rollback(MessageId message, String reason) {
        Objects.requireNonNull(message, "message");
        inTransaction("roll back message " + message, c -> {
            operations.rollback(c, message, null, reason(reason));
            return null;
        });
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
        return actOn(selection, actor, reason, true);
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
        return actOn(selection, actor, reason, false);
    }

    private long actOn(RunQuery selection, String actor, String reason, boolean cancel) {
        Objects.requireNonNull(selection, "selection");
        if (!dev.coop.internal.inspect.SelectionActions.names(selection)) {
            throw new CoopValidationException("selection must name a saga, a topic, a business key or a tag (it"
                    + " would act on every run)");
        }
        String who = auditText("actor", actor, 200);
        String why = reason(reason);
        String described = dev.coop.internal.inspect.SelectionActions.describe(selection);
        String what = (cancel ? "cancel" : "roll back") + " the runs of a selection (" + described + ")";
        long acted = 0;
        java.util.UUID after = null;
        while (true) {
            java.util.UUID from = after;
            dev.coop.internal.inspect.SelectionActions.Batch batch = inTransaction(what, c -> cancel
                    ? selections.cancelBatch(c, selection, from, who, why, described)
                    : selections.rollbackBatch(c, selection, from, who, why, described));
            acted += batch.acted();
            if (batch.picked() < dev.coop.internal.inspect.BulkActions.BATCH) {
                return acted;
            }
            after = batch.last();
        }
    }

    /**
     * Undoes one finished run and what it caused (a subtree). Use with care: the rest of the hierarchy stays
     * committed.
     */
    public void rollback(Lineage scope, String reason) {
        Objects.requireNonNull(scope, "scope");
        inTransaction("roll back scope " + scope, c -> {
            operations.rollback(c, null, scope, reason(reason));
            return null;
        });
    }

    /**
     * How many runs are {@code RUNNABLE}, {@code WAITING} and {@code PARKED} right now (each status present, zero
     * when none): cheap, it reads only the index of unfinished runs, never the history.
     */
    public Map<RunStatus, Long> unfinishedRuns() {
        try (Connection c = dataSource.getConnection()) {
            return inspection.unfinishedRuns(c);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not count the unfinished runs: " + e.getMessage(), e);
        }
    }

    /**
     * Counts over time: per saga and minute of the database's clock, how many runs were launched, committed, rolled
     * back, failed to roll back and were parked, for the minutes that began at most {@code window} ago (at most 7
     * days), oldest minute first; minutes without any are absent. Read from a rollup the database keeps as runs are
     * launched and finish (a few rows per saga and minute), never from the log; retention deletes the minutes it
     * prunes past.
     */
    public List<dev.coop.inspect.RunCount> counts(Duration window) {
        if (window == null || window.compareTo(Duration.ofMinutes(1)) < 0
                || window.compareTo(dev.coop.internal.inspect.RunCounts.MAX_WINDOW) > 0) {
            throw new CoopValidationException("window must be between 1 minute and "
                    + dev.coop.internal.inspect.RunCounts.MAX_WINDOW.toDays() + " days, was " + window);
        }
        return inTransaction("read the counts of the last " + window, c -> counts.read(c, window));
    }

    /** Parked runs, oldest first, at most {@code limit}. */
    public List<ParkedRun> parkedRuns(int limit) {
        if (limit < 1) {
            throw new CoopValidationException("limit must be positive, was " + limit);
        }
        return inTransaction("list parked runs", c -> operations.parked(c, limit));
    }

    /** Retries a parked run's step now, from attempt 1. False when the run is not parked. */
    public boolean retryNow(UUID runId) {
        Objects.requireNonNull(runId, "runId");
        return inTransaction("retry run " + runId, c -> operations.resolveParked(c, runId, false));
    }

    /**
     * The messages {@code text} names, newest first, at most 100: the message with that id, and the messages
     * launched with that idempotency key (of topics a saga is registered for, whatever the topic).
     */
    public List<dev.coop.inspect.MessageMatch> search(String text) {
        if (text == null || text.isBlank() || text.length() > 1_000) {
            throw new CoopValidationException("Search for 1 to 1000 characters, was "
                    + (text == null ? "null" : text.length() + " characters"));
        }
        return inTransaction("search for '" + text + "'", c -> search.find(c, text.strip()));
    }

    /** How many runs of {@code saga} are parked now (what {@link #retryParked} would retry). */
    public long countParked(String saga) {
        Objects.requireNonNull(saga, "saga");
        return inTransaction("count the parked runs of saga " + saga, c -> bulk.countParked(c, saga));
    }

    /**
     * Retries every parked run of {@code saga} now, from attempt 1, in batches of 1,000 runs, each batch one
     * transaction: a {@code RETRIED} event per run, and an audit entry per hierarchy (action {@code retry-parked},
     * {@code actor}, {@code reason}, how many of its runs). Runs parked again while it works are not retried twice.
     *
     * @return how many runs it retried
     */
    public long retryParked(String saga, String actor, String reason) {
        Objects.requireNonNull(saga, "saga");
        String who = auditText("actor", actor, 200);
        String why = reason(reason);
        long parked = countParked(saga);
        long retried = 0;
        for (long batches = parked / dev.coop.internal.inspect.BulkActions.BATCH + 1; batches > 0; batches--) {
            int n = inTransaction("retry parked runs of saga " + saga,
                    c -> bulk.retryParkedBatch(c, saga, who, why));
            retried += n;
            if (n < dev.coop.internal.inspect.BulkActions.BATCH) {
                break;
            }
        }
        return retried;
    }

    /** Treats a parked run's step as done without running it; the run goes on. False when it is not parked. */
    public boolean markStepDone(UUID runId) {
        Objects.requireNonNull(runId, "runId");
        return inTransaction("mark the step of run " + runId + " done",
                c -> operations.resolveParked(c, runId, true));
    }

    /**
     * {@link #retryNow(UUID)} for the run of a lineage; a lineage that is not its run's own (another hierarchy's
     * root, say) is refused with a {@link CoopValidationException}, so that what is recorded about the action (an
     * audit entry under the lineage's root) names the hierarchy it changed.
     */
    public boolean retryNow(Lineage run) {
        Objects.requireNonNull(run, "run");
        return inTransaction("retry run " + run, c -> operations.resolveParked(c, run, false));
    }

    /** {@link #markStepDone(UUID)} for the run of a lineage, refused like {@link #retryNow(Lineage)}. */
    public boolean markStepDone(Lineage run) {
        Objects.requireNonNull(run, "run");
        return inTransaction("mark the step of run " + run + " done", c -> operations.resolveParked(c, run, true));
    }

    /**
     * Completes the external task a token or correlation key names with {@code result}, which the parent's next step
     * reads like a child's result ({@link StepContext#taskResult(String, Class)}). One statement, committed as it
     * returns (one round trip): the task's run is counted off at its parent, which continues (in whichever engine
     * claims it) when it waits for nothing else. A task opened by its run's last step, whose completion may finish the
     * run, is completed in a transaction (three round trips: the first statement finds it so).
     *
     * @return {@link TaskOutcome#ALREADY_SETTLED} when the task was completed before with an equal result
     * @throws dev.coop.failure.TaskRefusedException when it was settled otherwise (another result, failed, timed
     *         out, cancelled, compensated); the message names the first settlement
     * @throws CoopValidationException for a malformed token or key, one no task has, or a result over the payload
     *         limit
     */
    public TaskOutcome complete(String tokenOrKey, Object result) {
        return complete(tokenOrKey, result, TaskSettlement.CLIENT);
    }

    /** As {@link #complete(String, Object)}, recording who completed it ({@code actor}, 1-200 characters). */
    public TaskOutcome complete(String tokenOrKey, Object result, String actor) {
        String json = tasks.resultJson(result);
        String who = auditText("actor", actor, TaskSettlement.MAX_ACTOR_LENGTH);
        return settleTask("complete external task", c -> tasks.settleAlone(c, tokenOrKey, true, json, null, who),
                c -> tasks.settle(c, tokenOrKey, true, json, null, who));
    }

    /**
     * Completes an external task in the caller's transaction ({@code connection}, not committed here): nothing
     * happens if it rolls back. The parent is woken by the database's notification when it commits.
     */
    public TaskOutcome complete(Connection connection, String tokenOrKey, Object result) {
        Objects.requireNonNull(connection, "connection");
        String json = tasks.resultJson(result);
        return inCallers("complete external task",
                () -> tasks.settle(connection, tokenOrKey, true, json, null, TaskSettlement.CLIENT));
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
        String who = auditText("actor", actor, TaskSettlement.MAX_ACTOR_LENGTH);
        String failure = TaskSettlement.failureJson(reason, who);
        return settleTask("fail external task", c -> tasks.settleAlone(c, tokenOrKey, false, null, failure, who),
                c -> tasks.settle(c, tokenOrKey, false, null, failure, who));
    }

    /** Fails an external task in the caller's transaction; see {@link #complete(Connection, String, Object)}. */
    public TaskOutcome fail(Connection connection, String tokenOrKey, String reason) {
        Objects.requireNonNull(connection, "connection");
        String failure = TaskSettlement.failureJson(reason, TaskSettlement.CLIENT);
        return inCallers("fail external task",
                () -> tasks.settle(connection, tokenOrKey, false, null, failure, TaskSettlement.CLIENT));
    }

    /**
     * The external task a token names, or the open task holding a correlation key (else the latest that held it):
     * its state tells the outside world whether to go on (a task that timed out or was cancelled need not be done).
     */
    public Optional<TaskView> externalTask(String tokenOrKey) {
        return inTransaction("read external task", c -> tasks.tasks().find(c, tokenOrKey));
    }

    /** Open external tasks, oldest first, at most {@code limit} (1 to 10,000). */
    public List<TaskView> openTasks(int limit) {
        return openTasks(null, limit);
    }

    /** Open external tasks named {@code name} (null: any), oldest first, at most {@code limit} (1 to 10,000). */
    public List<TaskView> openTasks(String name, int limit) {
        if (limit < 1 || limit > 10_000) {
            throw new CoopValidationException("limit must be between 1 and 10000, was " + limit);
        }
        return inTransaction("list open external tasks", c -> tasks.tasks().openTasks(c, name, limit));
    }

    /**
     * Sends a signal to {@code key}: the step waiting for it ({@link StepContext#awaitSignal(String, String)}) gets
     * {@code payload} as its task's result and its run goes on; when no step waits for the key yet, the signal is kept
     * for {@code keepFor} (1 ms to 100 years) and the next step that waits for the key takes it at once. One signal
     * completes one waiting step; several signals to one key are taken oldest first.
     */
    public SignalOutcome signal(String key, Object payload, Duration keepFor) {
        long keep = dev.coop.internal.store.Limits.delay("keepFor", Objects.requireNonNull(keepFor, "keepFor"))
                .toMillis();
        if (keep < 1) {
            throw new CoopValidationException("keepFor must be at least 1 ms, was " + keepFor);
        }
        String json = tasks.resultJson(payload);
        TaskSettlement.Result result = inTransaction("send a signal",
                c -> tasks.signal(c, key, json, TaskSettlement.CLIENT, keep));
        result.woken().forEach(saga -> localWake.accept(saga, 1));
        return result.outcome() == TaskOutcome.SETTLED ? SignalOutcome.DELIVERED : SignalOutcome.KEPT;
    }

    /** Open external tasks by name, with when the oldest of each was opened (for metrics and dashboards). */
    public List<dev.coop.inspect.OpenTaskCount> openTaskCounts() {
        return inTransaction("count open external tasks", c -> tasks.tasks().countOpen(c));
    }

    /**
     * One statement in auto-commit (one round trip) when it settles the task alone; else (a task of its parent's last
     * step, or one settled already) the settlement in a transaction.
     */
    private TaskOutcome settleTask(String what, Tx.Work<TaskSettlement.Result> alone,
            Tx.Work<TaskSettlement.Result> work) {
        TaskSettlement.Result result = Tx.oneStatement(dataSource, what, alone);
        if (result == null) {
            result = inTransaction(what, work);
        }
        result.woken().forEach(saga -> localWake.accept(saga, 1));
        return result.outcome();
    }

    private TaskOutcome inCallers(String what, java.util.concurrent.Callable<TaskSettlement.Result> work) {
        try {
            return work.call().outcome();
        } catch (SQLException e) {
            throw new dev.coop.failure.CoopStoreException("Could not " + what + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static String reason(String reason) {
        if (reason == null || reason.isBlank()) {
            throw new CoopValidationException("A reason is required; it is recorded in the event log");
        }
        if (reason.length() > dev.coop.internal.store.Limits.MAX_REASON_LENGTH) {
            throw new CoopValidationException("A reason is at most " + dev.coop.internal.store.Limits.MAX_REASON_LENGTH
                    + " characters (every run of the hierarchy records it); this one has " + reason.length());
        }
        if (reason.indexOf('\0') >= 0 || dev.coop.internal.store.Limits.loneSurrogateAt(reason) >= 0) {
            throw new CoopValidationException("A reason cannot contain a NUL character or an unpaired UTF-16"
                    + " surrogate: PostgreSQL cannot store them");
        }
        return reason;
    }

    private <T> T inTransaction(String what, Tx.Work<T> work) {
        return Tx.run(dataSource, what, work);
    }

    /**
     * The cooperation tree below a message: every run that handled it, their steps (with start and end times, what
     * each launched, and failures with their full cause chains), and recursively the runs those steps caused.
     * Read within bounds: in a tree of more than 5,000 runs, a run that caused more than 100 runs has them counted
     * per saga and status ({@link RunView#collapsed()}) and lists only those that did not commit (at most 100);
     * see docs/inspection.md for what such a read leaves out.
     */
    public Hierarchy tree(MessageId message) {
        Objects.requireNonNull(message, "message");
        return inTransaction("read the tree of message " + message, c -> inspection.hierarchy(c, message));
    }

    /**
     * The cooperation tree below one run (a subtree), read within the same bounds as {@link #tree(MessageId)}; only
     * the subtree's own runs and events are read, however large the rest of its hierarchy. The run is named by its
     * lineage, refused when that is not the run's own, or by its id alone (a lineage of one element).
     */
    public RunView tree(Lineage run) {
        Objects.requireNonNull(run, "run");
        return inTransaction("read the tree of run " + run, c -> inspection.run(c, run));
    }

    /** Runs, newest first, filtered by status, saga, topic and age; one page of at most {@code query.limit()}. */
    public List<RunSummary> runs(RunQuery query) {
        Objects.requireNonNull(query, "query");
        return inTransaction("list runs", c -> inspection.runs(c, query));
    }

    /**
     * How many runs match the query's status, saga, topic and age, by status (its limit and page do not apply;
     * statuses with no run are absent).
     */
    public Map<RunStatus, Long> countRuns(RunQuery query) {
        Objects.requireNonNull(query, "query");
        return inTransaction("count runs", c -> inspection.countRuns(c, query));
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
        Objects.requireNonNull(message, "message");
        String what = auditText("action", action, 100);
        String who = auditText("actor", actor, 200);
        String why = reason(reason);
        String result = outcome == null ? "" : outcome.substring(0, Math.min(outcome.length(), 2_000));
        return inTransaction("record an audit entry", c -> audit.record(c, message, scope, what, who, why,
                dev.coop.internal.store.Limits.loneSurrogateAt(result) >= 0 ? "?" : result.replace('\0', ' ')));
    }

    /** The audit entries of a hierarchy (by its root message), oldest first, at most 1,000. */
    public List<AuditEntry> audit(MessageId message) {
        Objects.requireNonNull(message, "message");
        return inTransaction("read the audit of message " + message, c -> audit.list(c, message, 1_000));
    }

    private static String auditText(String what, String value, int max) {
        if (value == null || value.isBlank() || value.length() > max || value.indexOf('\0') >= 0
                || dev.coop.internal.store.Limits.loneSurrogateAt(value) >= 0) {
            throw new CoopValidationException("An audit entry's " + what + " must be 1 to " + max
                    + " characters without NUL or unpaired surrogates, was "
                    + (value == null ? "null" : "'" + value + "'"));
        }
        return value;
    }

    /**
     * Deletes every hierarchy whose root message's runs all finished more than {@code olderThan} ago (database time)
     * and of which no run is runnable (also sleeping or due to retry), waiting or parked: its messages, events, runs
     * and cancellations, whole, in one transaction per {@value dev.coop.internal.retention.Retention#BATCH} hierarchies. A
     * hierarchy an operator is acting on at that moment is left for the next time. What is deleted is gone from trees,
     * logs, results and listings; a join that counted one of its messages keeps its counters, and a message id attached
     * to a join afterwards stays pending until reported. Engines do the same by themselves with
     * {@link CoopEngine.Builder#retention(Duration)}.
     *
     * @param olderThan zero or positive; zero deletes every finished hierarchy
     */
    public PruneResult prune(Duration olderThan) {
        checkAge(olderThan);
        return new Retention(store.schema(), time).pruneAll(dataSource, olderThan);
    }

    /** What {@link #prune(Duration)} would delete now: how many hierarchies, and a sample of their roots. */
    public PruneResult pruneDryRun(Duration olderThan) {
        checkAge(olderThan);
        return new Retention(store.schema(), time).dryRun(dataSource, olderThan);
    }

    private static void checkAge(Duration olderThan) {
        if (olderThan == null || olderThan.isNegative()) {
            throw new CoopValidationException("olderThan must be zero or positive, was " + olderThan);
        }
        if (olderThan.compareTo(Duration.ofDays(365L * 1000)) > 0) {
            throw new CoopValidationException("olderThan must be at most 1000 years, was " + olderThan);
        }
    }

    /**
     * Removes a saga, every version of it, from the topology registry: messages launched from now on no longer wait
     * for it. Runs already created for it still run when an engine that has the saga (in their version) is up; unlike
     * {@link #retireSagaVersion}, this does not check for unfinished runs.
     *
     * @return false when no saga of that name was registered
     */
    public boolean retireSaga(String saga) {
        try (Connection c = dataSource.getConnection()) {
            return topology.retire(c, saga);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not retire saga '" + saga + "': " + e.getMessage(), e);
        }
    }

    /**
     * Removes one version of a saga from the topology registry once none of its runs is unfinished (a drained rolling
     * deploy: no engine needs to keep that version any more). New runs get the highest version left; retiring the
     * last version retires the saga. Engines that start with the version register it again.
     *
     * @return false when that version of the saga is not registered
     * @throws CoopValidationException while runs of that version are unfinished (runnable, waiting, sleeping,
     *         parked or rolling back): the message says how many, by status
     */
    public boolean retireSagaVersion(String saga, int version) {
        Objects.requireNonNull(saga, "saga");
        return inTransaction("retire version " + version + " of saga '" + saga + "'",
                c -> topology.retireVersion(c, saga, version));
    }

    /**
     * The saga versions: every registered one (which one new runs get, how many of its runs are unfinished, which
     * running engines have it), and any version with unfinished runs that is not registered any more. A version
     * whose runs wait with no running engine that has it is {@link SagaVersionSummary#stranded() stranded}.
     */
    public List<SagaVersionSummary> sagaVersions() {
        return inTransaction("list the saga versions", topology::versions);
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
        ScheduleSummary summary = inTransaction("schedule '" + name + "'",
                c -> schedule(c, name, topic, payload, schedule, false));
        localWake.accept(EngineRuntime.SCHEDULES_CHANGED, 0);
        return summary;
    }

    /** Like {@link #schedule(String, Topic, Object, Schedule)}, inside the caller's transaction. */
    public <P> ScheduleSummary schedule(Connection connection, String name, Topic<P> topic, P payload,
            Schedule schedule) {
        Objects.requireNonNull(connection, "connection");
        try {
            return schedule(connection, name, topic, payload, schedule, true);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not schedule '" + name + "': " + e.getMessage(), e);
        }
    }

    private <P> ScheduleSummary schedule(Connection c, String name, Topic<P> topic, P payload, Schedule schedule,
            boolean wake) throws SQLException {
        Schedules.validateName(name);
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(schedule, "schedule");
        ScheduleSummary summary = schedules.upsert(c, name, topic.name(), json.writePayload(topic, payload),
                schedule);
        if (wake) {
            localWake.accept(EngineRuntime.SCHEDULES_CHANGED, 0); // again at commit, by notification
        }
        return summary;
    }

    /** Removes a schedule. Messages it launched already go on (cancel them to stop them). */
    public void unschedule(String name) {
        inTransaction("unschedule '" + name + "'", c -> {
            schedules.delete(c, name);
            return null;
        });
    }

    /** Every schedule, by name, with its next due time and the last message it launched. */
    public List<ScheduleSummary> schedules() {
        return inTransaction("list schedules", schedules::list);
    }

    /** Joins: a fan-in for code outside sagas (start, attach, report, inspect), on this client's database. */
    public Joins joins() {
        return new dev.coop.internal.join.JoinService(dataSource, store, json);
    }

    /** Settings of a client; each is validated as it is set. */
    public static final class Builder {
        private final DataSource dataSource;
        private String schema = Coop.DEFAULT_SCHEMA;
        private ObjectMapper objectMapper;
        private final java.util.List<String> polymorphicPrefixes = new java.util.ArrayList<>();
        private int maxPayloadBytes = Coop.DEFAULT_MAX_PAYLOAD_BYTES;
        private boolean migrate = true;
        private boolean requireHandlers;
        private final java.util.List<EngineListener> listeners = new java.util.ArrayList<>();
        private TimeSource clock;
        private Duration databaseTimeout = Coop.DEFAULT_DATABASE_TIMEOUT;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /** The PostgreSQL schema of Coop's tables (default {@value Coop#DEFAULT_SCHEMA}). */
        public Builder schema(String schema) {
            this.schema = new SchemaName(schema).value();
            return this;
        }

        /** The Jackson mapper for payloads (default: java.time support, unknown properties ignored). */
        public Builder objectMapper(ObjectMapper objectMapper) {
            this.objectMapper = Objects.requireNonNull(objectMapper, "objectMapper");
            return this;
        }

        /**
         * Packages (or class name prefixes, e.g. {@code "com.acme.orders."}) whose classes payloads may name as their
         * type ({@code @JsonTypeInfo(use = Id.CLASS)}). By default none: a type id naming a class is refused, so that
         * no producer can make Coop instantiate an arbitrary class. Type ids by name ({@code Id.NAME} with
         * {@code @JsonSubTypes}) need nothing here. Ignored when your mapper has a validator of its own.
         */
        public Builder allowPolymorphicTypes(String... prefixes) {
            for (String prefix : prefixes) {
                if (prefix == null || prefix.isBlank()) {
                    throw new CoopValidationException("A polymorphic type prefix cannot be empty: it would allow"
                            + " every class");
                }
                polymorphicPrefixes.add(prefix);
            }
            return this;
        }

        /** The largest payload accepted, in bytes of JSON (default 1 MiB). */
        public Builder maxPayloadBytes(int bytes) {
            this.maxPayloadBytes = Coop.checkPayloadLimit(bytes);
            return this;
        }

        /**
         * Whether launching a message on a topic that no saga is registered for fails with a
         * {@link CoopValidationException} (default false: the message is stored, nothing handles it, and a warning is
         * logged once per topic). A misspelt topic then fails at once instead of vanishing.
         */
        public Builder requireHandlers(boolean requireHandlers) {
            this.requireHandlers = requireHandlers;
            return this;
        }

        /** Whether to apply schema migrations when built (default true). */
        public Builder migrate(boolean migrate) {
            this.migrate = migrate;
            return this;
        }

        /** Adds a listener told of this client's launches (to count them, or to carry a trace with them). */
        public Builder listener(EngineListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /**
         * Where the client reads the time for delayed launches, schedules, join timeouts and operator actions
         * (default: the database's clock); the same source as the engines of the schema. See {@link TimeSource}.
         */
        public Builder clock(TimeSource clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * How long each statement of this client may wait for the database on a connection it takes from its
         * {@code DataSource} (default {@link Coop#DEFAULT_DATABASE_TIMEOUT}; {@link Duration#ZERO}: no bound): a
         * launch, an await or an operator action on a dead connection then fails within that time with a
         * {@link dev.coop.failure.CoopStoreException} that says so, instead of hanging. Statements on a connection
         * you pass in (a launch in your transaction) keep that connection's settings.
         */
        public Builder databaseTimeout(Duration timeout) {
            this.databaseTimeout = Coop.checkDatabaseTimeout(timeout);
            return this;
        }

        public CoopClient build() {
            SchemaName name = new SchemaName(schema);
            if (migrate) {
                Migrations.apply(dataSource, name);
            }
            Json json = new Json(objectMapper == null ? Json.defaultMapper() : objectMapper, maxPayloadBytes,
                    List.copyOf(polymorphicPrefixes));
            return new CoopClient(dev.coop.internal.guard.NetworkTimeouts.bounding(dataSource,
                    (int) databaseTimeout.toMillis()), name, json, new Completions(), (saga, runs) -> {
                    }, false, requireHandlers, Time.of(clock),
                    listeners.isEmpty() ? Listeners.NONE : new Listeners(listeners));
        }
    }
}
