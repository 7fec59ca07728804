package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.Listeners;
import dev.coop.internal.store.Emission;
import dev.coop.internal.store.Liveness;

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
import dev.coop.Topic;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * The context a step (or compensation, handler, finally part) runs with; collects what the step launches, its
 * context changes and its result until the step commits.
 */
final class StepContextImpl<P> extends StepContextForms<P> {
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
    /** The connection the part runs with, under its guard, and what Coop does to it around the part's code. */
    final StepConnection session;
    private final Kind kind;
    private final int iteration;
    private volatile boolean ended;
    private CooperationContext context;
    private final CooperationContext initialContext;
    private String result;
    /** What the part launches, and its children: results read, external tasks opened. */
    final StepLaunches launches;
    final StepChildren children;
    /** The retry policy of the step this context runs, for the outcome told to listeners; null for none. */
    dev.coop.RetryPolicy retryPolicy;
    /** How long the step's body may run ({@link SupervisedCall}), or null. */
    java.time.Duration timeout;
    /** Whether this is a step's body, which may leave its round when it is slow ({@link RoundSplit}). */
    boolean splittable;
    /** The run as locked again after its step left the round ({@link RoundSplit}), or null. */
    volatile ClaimedRun reclaimed;
    /** Whether the step left its round and its run could not be locked again: its outcome is discarded. */
    volatile boolean lost;

    /**
     * @param childSeqs the step instances whose children {@link #childResults()} reads
     */
    StepContextImpl(ClaimedRun run, String step, P payload, EngineContext engine, Connection connection, Kind kind,
            int iteration, CooperationContext context, int[] childSeqs) {
        this.run = run;
        this.step = step;
        this.payload = payload;
        this.engine = engine;
        this.session = new StepConnection(connection, engine);
        this.kind = kind;
        this.iteration = iteration;
        this.context = context;
        this.initialContext = context;
        this.launches = new StepLaunches(engine, session.guard());
        this.children = new StepChildren(run, engine, session.guard(), childSeqs);
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
        return children.results();
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
    dev.coop.ExternalTask open(String name, Object payload, dev.coop.TaskOptions options, boolean signal) {
        Objects.requireNonNull(options, "options");
        checkOpen("open external tasks");
        if (kind != Kind.STEP) {
            throw new IllegalStateException("Only steps open external tasks, not a " + kind.name().toLowerCase()
                    + " (saga " + run.saga() + ", step " + step + ")");
        }
        return children.open(name, payload, options, signal);
    }

    @Override
    public <T> T taskResult(String name, Class<T> type) {
        checkOpen("read task results");
        return children.taskResult(name, type);
    }

    @Override
    public void giveUpIfRequested() {
        checkOpen("check for a cancellation");
        if (kind == Kind.COMPENSATION) {
            return; // rollbacks are not cancellable; their deadline is checked between compensations
        }
        Liveness liveness;
        try {
            liveness = engine.store().liveness(session.handedOut(), run.rootId(), run.cancelScope());
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
        return session.handedOut();
    }

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload, LaunchOptions options) {
        Objects.requireNonNull(options, "options");
        return add(launches.scoped, topic, payload, context.plus(options.context().withMapper(engine.json().mapper())),
                options);
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, LaunchOptions options) {
        Objects.requireNonNull(options, "options");
        return add(launches.global, topic, payload, options.context(), options);
    }

    private <T> MessageId add(List<Emission> into, Topic<T> topic, T payload, CooperationContext childContext,
            LaunchOptions options) {
        Objects.requireNonNull(topic, "topic");
        checkOpen("launch messages");
        if (kind == Kind.COMPENSATION) {
            throw new IllegalStateException("A compensation cannot launch messages (saga " + run.saga() + ", step "
                    + step + ")");
        }
        return launches.add(into, topic, payload, childContext, options);
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
        if (Throwables.isInfrastructure(thrown)
                || (thrown instanceof InterruptedException && engine.dispatcher().stopped())) {
            return dev.coop.EngineListener.Outcome.RETRIED;
        }
        if (retryPolicy != null && !(thrown instanceof CooperationException) && !session.refused()
                && retryPolicy.shouldRetry(thrown, run.attempt())) {
            return dev.coop.EngineListener.Outcome.RETRIED;
        }
        return dev.coop.EngineListener.Outcome.FAILED;
    }

    /**
     * Ends the step from the worker while its code may still run (its timeout passed, or its outcome is not wanted):
     * nothing more can be launched or set, the connection refuses every further use, and a statement in flight is
     * cancelled and waited for {@code graceNanos} at most.
     *
     * @return whether no statement of the step is in flight any more
     */
    boolean revoke(long graceNanos) {
        ended = true;
        return session.revoke(graceNanos);
    }

    /** Ends the step: the connection handed out can no longer be used. */
    void close() {
        ended = true;
        session.close();
    }

    /** The step failed: undo its writes (and forget what it launched and changed), keeping the transaction. */
    void discardWrites() throws SQLException {
        launches.clear();
        children.tasks.clear();
        context = initialContext;
        result = null;
        session.discardWrites();
    }
}
