package dev.coop.internal.step;

import dev.coop.internal.Listeners;
import dev.coop.internal.guard.GuardedConnection;
import dev.coop.internal.store.Emission;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.ChildRun;
import dev.coop.internal.store.Liveness;
import dev.coop.internal.store.Uuids;
import dev.coop.internal.task.ExternalTasks;
import dev.coop.internal.task.TaskRequest;

import dev.coop.Deadlines;
import dev.coop.Saga;
import dev.coop.failure.CooperationException;

import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopValidationException;
import dev.coop.CooperationContext;
import dev.coop.Deadline;
import dev.coop.failure.Failure;
import dev.coop.Lineage;
import dev.coop.LaunchOptions;
import dev.coop.MessageId;
import dev.coop.RunResult;
import dev.coop.StepContext;
import dev.coop.Topic;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * The context a step (or compensation, handler, finally part) runs with; collects what the step launches, its
 * context changes and its result until the step commits.
 */
final class StepContextImpl<P> implements StepContext<P> {
    /** What user code may do in this context. */
    enum Kind {
        /** A step or child-failure handler: launches, context changes and results. */
        STEP,
        /** A compensation: context changes only; deadlines are the rollback path's. */
        COMPENSATION,
        /** A finally part: launches (awaited, see Saga.Builder#andFinally), context changes; no result. */
        FINALLY
    }

    private final ClaimedRun run;
    private final String step;
    /** The payload, or null until {@link #payload()} reads it from {@code lazyPayload}. */
    private P payload;
    private java.util.function.Supplier<P> lazyPayload;
    private final EngineContext engine;
    private final GuardedConnection.Guard guard;
    private final Kind kind;
    private final int iteration;
    private final int[] childSeqs;
    private volatile boolean ended;
    private CooperationContext context;
    private final CooperationContext initialContext;
    private String result;
    private List<RunResult> childResults;
    final List<Emission> scoped = new ArrayList<>();
    final List<Emission> global = new ArrayList<>();
    final List<TaskRequest> tasks = new ArrayList<>();
    /** The retry policy of the step this context runs, for the outcome told to listeners; null for none. */
    dev.coop.RetryPolicy retryPolicy;

    /**
     * @param childSeqs the step instances whose children {@link #childResults()} reads
     */
    StepContextImpl(ClaimedRun run, String step, P payload, EngineContext engine, Connection connection, Kind kind,
            int iteration, CooperationContext context, int[] childSeqs) {
        this.run = run;
        this.step = step;
        this.payload = payload;
        this.engine = engine;
        this.guard = GuardedConnection.wrap(connection);
        this.kind = kind;
        this.iteration = iteration;
        this.context = context;
        this.initialContext = context;
        this.childSeqs = childSeqs;
    }

    /**
     * A context whose payload is read from the message's text when the step first asks for it (a continuation of a run
     * whose payload this worker already read: it cannot fail now, and a step that never asks costs nothing).
     */
    StepContextImpl(ClaimedRun run, String step, java.util.function.Supplier<P> payload, EngineContext engine,
            Connection connection, Kind kind, int iteration, CooperationContext context, int[] childSeqs) {
        this(run, step, (P) null, engine, connection, kind, iteration, context, childSeqs);
        this.lazyPayload = payload;
    }

    @Override
    public synchronized P payload() { // a step may hand its context to threads of its own
        if (lazyPayload != null) {
            payload = lazyPayload.get();
            lazyPayload = null;
        }
        return payload;
    }

    @Override
    public MessageId messageId() {
        return new MessageId(run.messageId());
    }

    @Override
    public String saga() {
        return run.saga();
    }

    @Override
    public String step() {
        return step;
    }

    @Override
    public UUID runId() {
        return run.id();
    }

    @Override
    public Lineage lineage() {
        return new Lineage(Arrays.asList(run.lineage()));
    }

    @Override
    public int attempt() {
        return run.attempt();
    }

    @Override
    public int iteration() {
        return iteration;
    }

    @Override
    public Instant startedAt() {
        return run.claimedAt().toInstant();
    }

    @Override
    public CooperationContext context() {
        return context;
    }

    @Override
    public void setContext(CooperationContext replacement) {
        Objects.requireNonNull(replacement, "context");
        checkOpen("set the context");
        CooperationContext next = replacement.withMapper(engine.json().mapper());
        // deadlines can only be tightened: keep the present ones, the earlier winning
        this.context = next.plus(DeadlineRules.only(context));
    }

    @Override
    public Optional<Deadline> deadline() {
        return dev.coop.Deadlines.applying(context, kind == Kind.COMPENSATION);
    }

    @Override
    public void setResult(Object value) {
        checkOpen("set the result");
        if (kind != Kind.STEP) {
            throw new IllegalStateException("Only steps set a run's result, not a " + kind.name().toLowerCase()
                    + " (saga " + run.saga() + ", step " + step + ")");
        }
        result = engine.json().writeValue("result of saga '" + run.saga() + "'", value);
    }

    @Override
    public List<RunResult> childResults() {
        checkOpen("read child results");
        if (childResults == null) {
            if (childSeqs.length == 0) {
                childResults = List.of();
            } else {
                try {
                    List<RunResult> results = new ArrayList<>();
                    for (ChildRun r : engine.store().childRuns(guard.connection(), run.id(), childSeqs)) {
                        results.add(new RunResult(new MessageId(r.messageId()), r.saga(), r.runId(), r.status(),
                                r.result(), r.failure() == null ? null : Failure.fromJson(r.failure()),
                                engine.json().mapper()));
                    }
                    childResults = List.copyOf(results);
                } catch (SQLException e) {
                    throw new CoopStoreException("Could not read the child results of run " + run.id(), e);
                }
            }
        }
        return childResults;
    }

    @Override
    public <T> T childResult(MessageId message, Class<T> type) {
        List<RunResult> runs = childResults().stream().filter(r -> r.message().equals(message)).toList();
        if (runs.size() > 1) {
            throw new CoopValidationException("Message " + message + " was handled by " + runs.size()
                    + " sagas " + runs.stream().map(RunResult::saga).toList() + "; name the saga");
        }
        return only(runs, message, null).get(type);
    }

    @Override
    public <T> T childResult(MessageId message, String saga, Class<T> type) {
        List<RunResult> runs = childResults().stream()
                .filter(r -> r.message().equals(message) && r.saga().equals(saga)).toList();
        return only(runs, message, saga).get(type);
    }

    private RunResult only(List<RunResult> runs, MessageId message, String saga) {
        if (runs.isEmpty()) {
            throw new CoopValidationException("No run " + (saga == null ? "" : "of saga '" + saga + "' ")
                    + "handled message " + message + " among the children of the previous step of saga "
                    + run.saga() + " (" + childResults().size() + " children)");
        }
        return runs.getFirst();
    }

    @Override
    public dev.coop.ExternalTask openTask(String name, Object payload, dev.coop.TaskOptions options) {
        return open(name, payload, options, false);
    }

    @Override
    public dev.coop.ExternalTask awaitSignal(String name, String key) {
        return open(name, java.util.Map.of("signal", key), dev.coop.TaskOptions.none().key(key), true);
    }

    @Override
    public dev.coop.ExternalTask awaitSignal(String name, String key, java.time.Duration timeout) {
        return open(name, java.util.Map.of("signal", key), dev.coop.TaskOptions.none().key(key).timeout(timeout),
                true);
    }

    private dev.coop.ExternalTask open(String name, Object payload, dev.coop.TaskOptions options, boolean signal) {
        Objects.requireNonNull(options, "options");
        checkOpen("open external tasks");
        if (kind != Kind.STEP) {
            throw new IllegalStateException("Only steps open external tasks, not a " + kind.name().toLowerCase()
                    + " (saga " + run.saga() + ", step " + step + ")");
        }
        Topic<Object> topic = Topic.of(name, Object.class); // the name's rules are a topic's
        String key = options.key().orElse(null);
        if (key != null && tasks.stream().anyMatch(t -> key.equals(t.key()))) {
            throw new CoopValidationException("External task key '" + key + "' was already used by this step");
        }
        String compensationTopic = options.compensationTopic().map(Topic::name).orElse(null);
        String compensation = compensationTopic == null
                ? null
                : engine.json().writePayload(options.compensationTopic().get(),
                        options.compensationPayload().orElseThrow());
        TaskRequest task = new TaskRequest(Uuids.v7(), Uuids.v7(), name, engine.json().writePayload(topic, payload),
                ExternalTasks.newToken(), key, compensationTopic, compensation, signal,
                options.timeout().map(t -> run.claimedAt().plus(t)).orElse(null));
        tasks.add(task);
        return new dev.coop.ExternalTask(name, new MessageId(task.messageId()), task.token(), options.key());
    }

    @Override
    public <T> T taskResult(String name, Class<T> type) {
        checkOpen("read task results");
        List<ChildRun> runs;
        try {
            runs = childSeqs.length == 0
                    ? List.of()
                    : new ExternalTasks(engine.store().schema(), engine.store().time())
                            .taskRuns(guard.connection(), run.id(), childSeqs, name);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not read the external tasks of run " + run.id(), e);
        }
        if (runs.size() != 1) {
            throw new CoopValidationException("The previous step of saga " + run.saga() + " opened " + runs.size()
                    + " external tasks named '" + name + "'" + (runs.isEmpty()
                            ? ""
                            : "; read them by message with"
                                    + " childResult(task.message(), type)"));
        }
        ChildRun r = runs.getFirst();
        return new RunResult(new MessageId(r.messageId()), r.saga(), r.runId(), r.status(), r.result(),
                r.failure() == null ? null : Failure.fromJson(r.failure()), engine.json().mapper()).get(type);
    }

    @Override
    public void giveUpIfRequested() {
        checkOpen("check for a cancellation");
        if (kind == Kind.COMPENSATION) {
            return; // rollbacks are not cancellable; their deadline is checked between compensations
        }
        Liveness liveness;
        try {
            liveness = engine.store().liveness(guard.connection(), run.lineage());
        } catch (SQLException e) {
            throw new CoopStoreException("Could not check for a cancellation of run " + run.id(), e);
        }
        dev.coop.Saga<?> saga = engine.sagas().get(run.saga(), run.sagaVersion());
        Failure reason = engine.strategyOf(saga)
                .giveUpOnHappyPath(Decisions.facts(run, saga, context, liveness.now(), liveness.cancellation()))
                .orElse(null);
        if (reason != null) {
            throw dev.coop.failure.CooperationException.of(Decisions.gaveUp(reason, source()));
        }
    }

    private String source() {
        return run.saga() + "[" + engine.engineId() + "]";
    }

    @Override
    public String engineId() {
        return engine.engineId();
    }

    @Override
    public Connection connection() {
        return guard.connection();
    }

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload) {
        return launch(topic, payload, LaunchOptions.none());
    }

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload, CooperationContext extra) {
        return launch(topic, payload, LaunchOptions.none().context(extra));
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload) {
        return launchOnGlobalScope(topic, payload, LaunchOptions.none());
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, CooperationContext extra) {
        return launchOnGlobalScope(topic, payload, LaunchOptions.none().context(extra));
    }

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload, Instant at) {
        return launch(topic, payload, LaunchOptions.none().at(at));
    }

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload, CooperationContext extra, Instant at) {
        return launch(topic, payload, LaunchOptions.none().context(extra).at(at));
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, Instant at) {
        return launchOnGlobalScope(topic, payload, LaunchOptions.none().at(at));
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, CooperationContext extra, Instant at) {
        return launchOnGlobalScope(topic, payload, LaunchOptions.none().context(extra).at(at));
    }

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload, LaunchOptions options) {
        Objects.requireNonNull(options, "options");
        return add(scoped, topic, payload, context.plus(options.context().withMapper(engine.json().mapper())),
                options);
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, LaunchOptions options) {
        Objects.requireNonNull(options, "options");
        return add(global, topic, payload, options.context(), options);
    }

    private <T> MessageId add(List<Emission> into, Topic<T> topic, T payload, CooperationContext childContext,
            LaunchOptions options) {
        Objects.requireNonNull(topic, "topic");
        checkOpen("launch messages");
        if (kind == Kind.COMPENSATION) {
            throw new IllegalStateException("A compensation cannot launch messages (saga " + run.saga() + ", step "
                    + step + ")");
        }
        String key = options.idempotencyKey().orElse(null);
        if (key != null) {
            UUID holder = keyHolder(topic, key);
            if (holder != null) {
                return new MessageId(holder);
            }
        }
        if (!engine.listeners().isEmpty()) {
            childContext = engine.listeners().launching(topic.name(), childContext);
        }
        engine.json().checkLaunchContext(childContext);
        UUID id = Uuids.v7();
        into.add(new Emission(id, topic.name(), engine.json().writePayload(topic, payload),
                engine.json().writeContext(childContext),
                options.at().map(at -> at.atOffset(java.time.ZoneOffset.UTC)).orElse(null), key,
                options.priority(), options.orderingKey().orElse(null), options.businessKey().orElse(null),
                options.tags()));
        return new MessageId(id);
    }

    /**
     * The message already holding an idempotency key: one this step launched, or one in the database. A launch of
     * the key that commits after this look-up makes this step's emit fail as database trouble ({@link
     * Store#KEY_TAKEN}); the step runs again and finds it here.
     */
    private UUID keyHolder(Topic<?> topic, String key) {
        for (List<Emission> launched : List.of(scoped, global)) {
            for (Emission e : launched) {
                if (key.equals(e.idempotencyKey()) && topic.name().equals(e.topic())) {
                    return e.messageId();
                }
            }
        }
        try {
            return engine.store().messageWithKey(guard.connection(), topic.name(), key);
        } catch (java.sql.SQLException e) {
            throw new CoopStoreException("Could not look up the idempotency key '" + key
                    + "' of topic '" + topic.name() + "': " + e.getMessage(), e);
        }
    }

    private void checkOpen(String what) {
        if (ended) {
            throw new IllegalStateException("Step '" + step + "' of saga " + run.saga() + " has ended; " + what
                    + " while the step runs");
        }
    }

    /** The context to store when the step commits (JSON text, null when empty). */
    String contextJson() {
        if (context == initialContext && kind != Kind.COMPENSATION) {
            return run.context(); // unchanged: the text it was read from (a compensation's is merged with the parent's)
        }
        return engine.json().writeContext(context);
    }

    /** Whether the step changed the context. */
    boolean contextChanged() {
        return !context.equals(initialContext);
    }

    /** The result the step set (JSON text), or null. */
    String result() {
        return result;
    }

    Listeners listeners() {
        return engine.listeners();
    }

    dev.coop.EngineListener.Part part() {
        return switch (kind) {
            case STEP -> dev.coop.EngineListener.Part.STEP;
            case COMPENSATION -> dev.coop.EngineListener.Part.COMPENSATION;
            case FINALLY -> dev.coop.EngineListener.Part.FINALLY;
        };
    }

    /** How the engine will treat user code that threw {@code thrown} (null: it returned); for listeners. */
    dev.coop.EngineListener.Outcome outcome(Throwable thrown) {
        if (thrown == null) {
            return dev.coop.EngineListener.Outcome.COMMITTED;
        }
        if (thrown instanceof dev.coop.failure.GaveUpException) {
            return dev.coop.EngineListener.Outcome.GAVE_UP;
        }
        if (Failures.isInfrastructure(thrown)
                || (thrown instanceof InterruptedException && engine.dispatcher().stopped())) {
            return dev.coop.EngineListener.Outcome.RETRIED;
        }
        if (retryPolicy != null && !(thrown instanceof CooperationException) && !refused()
                && retryPolicy.shouldRetry(thrown, run.attempt())) {
            return dev.coop.EngineListener.Outcome.RETRIED;
        }
        return dev.coop.EngineListener.Outcome.FAILED;
    }

    /** Runs {@code action} before the step first uses its connection (see {@link GuardedConnection.Guard}). */
    void beforeFirstUse(GuardedConnection.FirstUse action) {
        guard.beforeFirstUse(action);
    }

    /** The step's connection itself, under the guard (for Coop's settings around user code). */
    Connection rawConnection() {
        return guard.target();
    }

    /** Whether the part was refused a statement that would have ended its transaction. */
    boolean refused() {
        return guard.refusal() != null;
    }

    /**
     * What the part threw, or the statement it was refused when it caught that refusal (or threw something else
     * after it): a part that tried to end its transaction fails.
     */
    Throwable withRefusal(Throwable thrown) {
        Exception refusal = guard.refusal();
        if (refusal == null || thrown == refusal) {
            return thrown;
        }
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable t = thrown; t != null && seen.size() < 100 && seen.add(t); t = t.getCause()) {
            if (t == refusal) {
                return thrown; // it carries the refusal (a framework's translation of it, say)
            }
        }
        if (thrown != null) {
            refusal.addSuppressed(thrown);
        }
        return refusal;
    }

    /** Ends the step: the connection handed out can no longer be used. */
    void close() {
        ended = true;
        guard.close();
    }

    /** The step failed: undo its writes (and forget what it launched and changed), keeping the transaction. */
    void discardWrites() throws SQLException {
        scoped.clear();
        global.clear();
        tasks.clear();
        context = initialContext;
        result = null;
        guard.discardWrites();
    }
}
