package dev.coop;

import java.time.Duration;

/**
 * Observes an engine (and a client) at work: where metrics, traces and framework integrations attach. Every method
 * has a no-op default; register one or more with {@link CoopEngine.Builder#listener(EngineListener)} or
 * {@link CoopClient.Builder#listener(EngineListener)}. Methods are called on engine threads, on the hot path: keep
 * them short and never block. Whatever a listener throws is caught and logged; it never changes what a step does.
 *
 * <p>
 * {@code coop-micrometer} and {@code coop-opentelemetry} implement it; so does the Spring Boot starter, to let
 * {@code JdbcTemplate} take part in a step's transaction.
 */
public interface EngineListener {
    /** The name of the context entry that carries the W3C {@code traceparent} of the step (or request) that launched. */
    String TRACE_PARENT = "coop.traceparent";

    /** A listener that does nothing. */
    EngineListener NONE = new EngineListener() {
    };

    /** What the code of a step, compensation, finally part or child-failure handler is. */
    enum Part {
        /** A step, or a step's child-failure handler. */
        STEP,
        /** A compensation, on the rollback path. */
        COMPENSATION,
        /** A finally part. */
        FINALLY
    }

    /**
     * How user code ended, as the engine decides right after it returned: its transaction then commits the outcome
     * (should that commit fail, {@link #databaseRetry} follows and the code runs again).
     */
    enum Outcome {
        /** It returned; its writes and messages commit. */
        COMMITTED,
        /** It threw, and is attempted again: its retry policy allows it, or the database was in trouble. */
        RETRIED,
        /** It threw, for good: the run rolls back (or, with a parking retry policy, parks). */
        FAILED,
        /** It gave up: the scope was cancelled or a deadline passed. */
        GAVE_UP
    }

    /**
     * User code is about to run on this thread, with {@code step} (its connection is the step's transaction). What it
     * returns is handed back to {@link #stepEnded} (a span, a start time), which is called on the same thread.
     */
    default Object stepStarted(StepContext<?> step, Part part) {
        return null;
    }

    /**
     * User code returned or threw; called before its connection is closed to it.
     *
     * @param state what {@link #stepStarted} returned
     * @param nanos how long the code ran
     * @param failure what it threw, or null
     */
    default void stepEnded(StepContext<?> step, Part part, Object state, Outcome outcome, long nanos,
            Throwable failure) {
    }

    /**
     * A worker claimed a run of {@code saga}. {@code waited}: from when the run became runnable to the claim (the
     * scheduling latency), never negative.
     */
    default void claimed(String saga, Duration waited) {
    }

    /**
     * A worker committed a transaction that advanced several runs of {@code saga} (a round; see
     * {@link CoopEngine.Builder#maxRunsPerTransaction(int)}): it claimed {@code claimed} runs and executed a step of
     * {@code executed} of them in it (the others were released unexecuted: the round's time was up, or the engine
     * stopped). Not called for a transaction of one run. For the distribution of steps per commit.
     */
    default void roundCommitted(String saga, int claimed, int executed) {
    }

    /** A run of {@code saga} continues after waiting {@code waited} for the children its previous step launched. */
    default void barrierPassed(String saga, Duration waited) {
    }

    /**
     * The engine met database trouble (a lost connection, a serialization failure) and retries later; {@code saga}
     * is null when the trouble was not in a run's transaction.
     */
    default void databaseRetry(String saga, Throwable cause) {
    }

    /** The engine's notification connection is listening (at start, and after each reconnect). */
    default void notificationsConnected() {
    }

    /** The engine's notification connection (LISTEN) was lost; the engine polls and reconnects. */
    default void notificationsLost(Throwable cause) {
    }

    /**
     * The engine's workers got no connection from its {@code DataSource} for {@code waited} (several poll intervals:
     * the pool is exhausted or the database unreachable), so it processes nothing; also logged once as an ERROR.
     * Told once, until {@link #connectionsAvailable()}.
     */
    default void connectionsStarved(Duration waited) {
    }

    /** The engine's workers get connections again after {@link #connectionsStarved(Duration)}. */
    default void connectionsAvailable() {
    }

    /**
     * A message on {@code topic} is being launched, by a client or a step, with {@code context}: the context returned
     * is stored with it instead (to carry a trace, say). Return {@code context} to leave it as it is.
     */
    default CooperationContext launching(String topic, CooperationContext context) {
        return context;
    }
}
