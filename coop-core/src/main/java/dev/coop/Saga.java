package dev.coop;

import dev.coop.internal.saga.SagaRules;
import java.util.List;
import java.util.Objects;

/**
 * A saga: a named handler of one topic, made of ordered steps. Each run of a saga handles one message; a step starts
 * only after every run caused by the previous step finished. Build one with {@link #on(Topic, String)}.
 */
public final class Saga<P> {
    /** The highest saga version. */
    public static final int MAX_VERSION = 1_000_000;
    /** The largest {@link Builder#concurrency(int)}: each slot is an advisory lock tried in turn. */
    public static final int MAX_CONCURRENCY = 1024;
    /** The largest {@link Builder#rateLimit}: the saga keeps one row per start in the window. */
    public static final int MAX_RATE_LIMIT = 100_000;

    private final Topic<P> topic;
    private final String name;
    private final List<Step<P>> steps;
    private final CooperationStrategy strategy;
    private final int workers;
    private final boolean transactionPerStep;
    private final int version;
    private final int concurrency;
    private final int rateLimit;
    private final java.time.Duration ratePeriod;
    /** The steps' own timeouts, by step name, and the default of the others (null: none). */
    private final java.util.Map<String, java.time.Duration> timeouts;
    private final java.time.Duration stepTimeout;

    private Saga(Builder<P> b) {
        this.topic = b.topic;
        this.name = b.name;
        this.version = b.version;
        this.steps = b.steps.list();
        this.strategy = b.strategy;
        this.workers = b.workers;
        this.transactionPerStep = b.transactionPerStep;
        this.concurrency = b.concurrency;
        this.rateLimit = b.rateLimit;
        this.ratePeriod = b.ratePeriod;
        this.timeouts = b.steps.timeouts();
        this.stepTimeout = b.stepTimeout;
    }

    /**
     * How long the body of step {@code stepName} may run: its own {@link Builder#timeout}, else the saga's
     * {@link Builder#stepTimeout}; empty when neither is set (or the step is a sleep or a finally part).
     */
    public java.util.Optional<java.time.Duration> timeoutOf(String stepName) {
        java.time.Duration own = timeouts.get(stepName);
        if (own != null) {
            return java.util.Optional.of(own);
        }
        boolean body = steps.stream().anyMatch(s -> s.name().equals(stepName) && s.wakeAt() == null
                && !s.isFinallyPart());
        return body ? java.util.Optional.ofNullable(stepTimeout) : java.util.Optional.empty();
    }

    /**
     * How many runs of this saga may execute a step at once, across every engine (see
     * {@link Builder#concurrency(int)}); 0 when there is no such limit.
     */
    public int concurrency() {
        return concurrency;
    }

    /** How many steps of this saga may start per {@link #ratePeriod()}, across every engine; 0 when unlimited. */
    public int rateLimit() {
        return rateLimit;
    }

    /** The period of {@link #rateLimit()}, or null when the saga has no rate limit. */
    public java.time.Duration ratePeriod() {
        return ratePeriod;
    }

    /**
     * The saga's version (default 1; see {@link Builder#version(int)}). A run keeps the version it was created with
     * and only engines that have that version of the saga execute it.
     */
    public int version() {
        return version;
    }

    /**
     * How many workers of an engine may execute this saga's runs at once (see {@link Builder#workers(int)}); 0 when
     * the saga has no limit of its own (the engine's workers are its limit).
     */
    public int workers() {
        return workers;
    }

    /**
     * Whether each step of this saga's runs commits in a transaction of its own, never together with steps of other
     * runs (see {@link Builder#transactionPerStep()}).
     */
    public boolean transactionPerStep() {
        return transactionPerStep;
    }

    /** The saga's own strategy, or null to use the engine's. */
    public CooperationStrategy strategy() {
        return strategy;
    }

    /** Starts a saga named {@code name} that handles every message on {@code topic}. */
    public static <P> Builder<P> on(Topic<P> topic, String name) {
        Objects.requireNonNull(topic, "topic");
        return new Builder<>(topic, name, SagaRules.of(name));
    }

    public Topic<P> topic() {
        return topic;
    }

    public String name() {
        return name;
    }

    /** The steps, in order. */
    public List<Step<P>> steps() {
        return steps;
    }

    @Override
    public String toString() {
        return "Saga[" + name + (version == 1 ? "" : " v" + version) + " on " + topic.name() + ", " + steps.size()
                + " steps]";
    }

    /**
     * One step of a saga: its name, its code, and optionally how it is compensated, how it handles failures of the
     * runs it caused, how it retries its own failures, and its finally part. Coop adds two kinds of steps of its
     * own: sleeps ({@code wakeAt} set) and the finally part of a step run on the happy path ({@code finallyOf} set).
     *
     * @param finallyBody the step's finally part (see {@link Builder#andFinally}), or null
     * @param wakeAt for a sleep step: when the next step may start, or null
     * @param finallyOf for the step that runs a finally part on the happy path: the index of its step, or -1
     */
    public record Step<P>(String name, FlowBody<P> body, Compensation<P> compensation,
            ChildFailureFlow<P> childFailureHandler, RetryPolicy retryPolicy, StepBody<P> finallyBody,
            WakeTime<P> wakeAt, int finallyOf) {

        Step<P> with(Compensation<P> c, ChildFailureFlow<P> h, RetryPolicy r, StepBody<P> f) {
            return new Step<>(name, body, c, h, r, f, wakeAt, finallyOf);
        }

        /** Whether this step only runs another step's finally part. */
        public boolean isFinallyPart() {
            return finallyOf >= 0;
        }
    }

    /** When a sleep step ends: computed when the step runs. */
    @FunctionalInterface
    public interface WakeTime<P> {
        /** @return the instant, or null to compute it as {@code duration} after the step started */
        java.time.Instant at(StepContext<P> step) throws Exception;
    }

    /** Collects the steps of a saga; each call validates its input at once. */
    public static final class Builder<P> {
        private final Topic<P> topic;
        private final String name;
        /** What each call may be given; its messages name this saga. */
        private final SagaRules rules;
        /** The steps so far, with their options. */
        private final SagaSteps<P> steps;
        private CooperationStrategy strategy;
        private int workers;
        private boolean transactionPerStep;
        private int version = 1;
        private int concurrency;
        private int rateLimit;
        private java.time.Duration ratePeriod;
        private java.time.Duration stepTimeout;

        private Builder(Topic<P> topic, String name, SagaRules rules) {
            this.topic = topic;
            this.name = name;
            this.rules = rules;
            this.steps = new SagaSteps<>(rules);
        }

        /** Adds a step. Step names are unique within the saga and recorded in the event log. */
        public Builder<P> step(String stepName, StepBody<P> body) {
            Objects.requireNonNull(body, "body of step '" + stepName + "'");
            return add(stepName, step -> {
                body.run(step);
                return Flow.CONTINUE;
            }, null, -1);
        }

        /**
         * Adds a step that decides where the run goes next: {@link Flow#next()}, {@link Flow#repeat()} (a loop; the
         * step sees its {@link StepContext#iteration()}) or {@link Flow#goTo(String)}.
         */
        public Builder<P> flowStep(String stepName, FlowBody<P> body) {
            Objects.requireNonNull(body, "body of step '" + stepName + "'");
            return add(stepName, body, null, -1);
        }

        /**
         * Adds a step that runs every {@code period}, {@code times} times in all (the reference's periodic
         * scenarios, inside one run): after each iteration the run waits until {@code period} after that iteration
         * started, then runs the step again; after the last, the next step follows. The step sees its iteration
         * ({@link StepContext#iteration()}, from 1). To stop on a condition instead, use a {@link #flowStep} that
         * returns {@link Flow#repeatAfter} until the condition holds and then {@link Flow#next()}. Waits hold no
         * thread and survive restarts; for periodic launches of whole runs, see {@code dev.coop.schedule.Schedule}.
         */
        public Builder<P> periodic(String stepName, java.time.Duration period, int times, StepBody<P> body) {
            Objects.requireNonNull(body, "body of periodic step '" + stepName + "'");
            rules.periodic(stepName, period, times);
            return add(stepName, step -> {
                body.run(step);
                return step.iteration() < times ? Flow.repeatAfter(period) : Flow.next();
            }, null, -1);
        }

        /**
         * Adds a step that waits {@code duration} before the next step starts. The wait holds no thread and no
         * connection, and survives restarts.
         */
        public Builder<P> sleep(String stepName, java.time.Duration duration) {
            Objects.requireNonNull(duration, "duration of sleep step '" + stepName + "'");
            rules.sleep(stepName, duration);
            return sleepUntil(stepName, step -> step.startedAt().plus(duration));
        }

        /**
         * Adds a step that waits until the instant {@code wakeAt} computes (from the payload or the context, say)
         * before the next step starts; an instant in the past does not wait. Compared with the engine's time (see {@link TimeSource}).
         */
        public Builder<P> sleepUntil(String stepName, WakeTime<P> wakeAt) {
            Objects.requireNonNull(wakeAt, "wake time of sleep step '" + stepName + "'");
            return add(stepName, step -> Flow.CONTINUE, wakeAt, -1);
        }

        /**
         * Gives the step added last a finally part, which runs exactly once per run: after the step (and the runs
         * it caused) succeeded, as a step of its own named {@code "<step> (finally)"}; in the failing transaction,
         * after the step's own writes were undone, when the step fails and the run rolls back; or after the step's
         * compensation (even a failed one), when the run rolls back before the finally part ran. It cannot launch
         * messages. When it throws: on the happy path it fails like a step; in a failing step's transaction it is
         * logged and its writes undone; during a rollback it ends the run ROLLBACK_FAILED.
         */
        public Builder<P> andFinally(StepBody<P> finallyBody) {
            Objects.requireNonNull(finallyBody, "finally part");
            steps.finallyPart(finallyBody);
            return this;
        }

        private Builder<P> add(String stepName, FlowBody<P> body, WakeTime<P> wakeAt, int finallyOf) {
            steps.add(stepName, body, wakeAt, finallyOf);
            return this;
        }

        /** Sets how the step added last is undone when the run rolls back (default: nothing to undo). */
        public Builder<P> compensateWith(Compensation<P> compensation) {
            Objects.requireNonNull(compensation, "compensation");
            steps.compensation(compensation);
            return this;
        }

        /** Sets what the step added last does when runs it caused fail (default: roll back this run too). */
        public Builder<P> onChildFailure(ChildFailureHandler<P> handler) {
            Objects.requireNonNull(handler, "handler");
            return onChildFailure((step, failure, handling, pending) -> {
                handler.handle(step, failure);
                return pending;
            });
        }

        /**
         * Sets what the step added last does when runs it caused fail, and where the run goes next: the handler
         * sees which handler run this is and the step's own decision, and returns a {@link Flow} (continue, repeat
         * the step, or go to another step). Throwing rolls the run back.
         */
        public Builder<P> onChildFailure(ChildFailureFlow<P> handler) {
            Objects.requireNonNull(handler, "handler");
            steps.childFailureHandler(handler);
            return this;
        }

        /** Sets how the step added last retries its own failures (default: no retry, the run rolls back). */
        public Builder<P> retry(RetryPolicy policy) {
            Objects.requireNonNull(policy, "policy");
            steps.retryPolicy(policy);
            return this;
        }

        /**
         * How long the body of the step added last may run, from its start to its return (like a start-to-close
         * timeout). Past it, the attempt fails with {@link dev.coop.failure.StepTimedOutException}: the step's writes
         * are rolled back, its connection refuses every further use (so nothing it does afterwards can commit), its
         * thread is interrupted, and its retry policy decides what follows. Measured with the JVM's clock, at least
         * 1 ms (whole milliseconds). Overrides the saga's {@link #stepTimeout}. See docs/guide/step-timeout.md.
         */
        public Builder<P> timeout(java.time.Duration timeout) {
            steps.timeout(timeout);
            return this;
        }

        /**
         * The {@link #timeout} of every step of this saga that sets none of its own (default: none, a step may run
         * as long as it likes).
         */
        public Builder<P> stepTimeout(java.time.Duration timeout) {
            this.stepTimeout = rules.defaultTimeout(stepTimeout, timeout);
            return this;
        }

        /** This saga's own strategy for the event loop's decisions, instead of the engine's. */
        public Builder<P> strategy(CooperationStrategy strategy) {
            this.strategy = Objects.requireNonNull(strategy, "strategy");
            return this;
        }

        /**
         * At most {@code workers} workers of each engine execute this saga's runs at once, so that a slow saga
         * cannot take every worker of an engine from the others (default: no limit of its own). The limit is per
         * engine: two engines running the saga may run twice as many at once. Between 1 and 1024.
         */
        public Builder<P> workers(int workers) {
            this.workers = rules.between("workers", workers, 1, 1024);
            return this;
        }

        /**
         * Each step of this saga's runs commits in a transaction of its own. By default, when several runs of a saga
         * are due at once, a worker executes one step of each of several of them in one transaction (each step behind
         * its own savepoint, so that a failing step fails only its run) and commits them together, which costs the
         * database much less per step. Opt out when a step must be durable the moment it returns, or when a step's
         * effects outside the database must not be repeated because a transaction it shared with another run's step
         * could not commit (see {@code CoopEngine.Builder#maxRunsPerTransaction}).
         */
        public Builder<P> transactionPerStep() {
            this.transactionPerStep = true;
            return this;
        }

        /**
         * The saga's version, from 1 (the default) to {@value Saga#MAX_VERSION}. Give a saga a new version when a deploy
         * changes its steps while runs are in flight: each run keeps the version it was created with, an engine
         * executes only runs of the versions it has and leaves the others to engines that have them, and new runs
         * get the highest version registered by any engine. An engine may register several versions of one saga
         * (the old one beside the new one, to drain it); {@code CoopClient.retireSagaVersion} removes a version once
         * none of its runs is unfinished.
         */
        public Builder<P> version(int version) {
            this.version = rules.between("version", version, 1, MAX_VERSION);
            return this;
        }

        /**
         * At most {@code runs} runs of this saga execute a step at the same time, across every engine sharing the
         * database (default: no such limit). A run that finds every slot busy waits, runnable, without counting as a
         * failure or a retry; the engine's workers go on with other sagas meanwhile. Between 1 and
         * {@value #MAX_CONCURRENCY}. Part of the saga's definition: see {@code docs/protocol.md}, Saga limits.
         */
        public Builder<P> concurrency(int runs) {
            rules.setOnce("concurrency", concurrency != 0, concurrency);
            this.concurrency = rules.between("concurrency", runs, 1, MAX_CONCURRENCY);
            return this;
        }

        /**
         * At most {@code starts} steps of this saga start in any window of length {@code period}, across every engine
         * sharing the database (default: no such limit). A run over the limit waits, runnable, until the oldest of
         * the last {@code starts} starts is a period old. Between 1 and {@value #MAX_RATE_LIMIT} starts, a period
         * between 1 ms and 1 day.
         */
        public Builder<P> rateLimit(int starts, java.time.Duration period) {
            rules.setOnce("rateLimit", rateLimit != 0, rateLimit + " per " + ratePeriod);
            this.ratePeriod = rules.rateLimit(starts, MAX_RATE_LIMIT, period);
            this.rateLimit = starts;
            return this;
        }

        public Saga<P> build() {
            rules.hasSteps(!steps.isEmpty());
            return new Saga<>(this);
        }
    }
}
