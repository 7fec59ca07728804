package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.failure.Failure;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Coop's own bookkeeping (or the JVM) failed, not the step: nothing of the transaction is kept, nothing is logged as a
 * step failure, and the run is retried later with jittered exponential backoff, or parked after {@link #MAX_RETRIES}
 * such retries in a row.
 */
final class RetryLater {
    private static final Logger log = LoggerFactory.getLogger(RetryLater.class);
    private static final long MAX_RETRY_DELAY_MILLIS = 30_000;
    /**
     * How often in a row a run may meet database trouble before it is parked: at the 30 s ceiling of the backoff,
     * about eight hours of trouble. Each retry is counted in {@code run.retries} (reset by every transition).
     */
    static final int MAX_RETRIES = 1_000;

    private final EngineContext engine;
    private final StepTransaction tx;

    RetryLater(EngineContext engine, StepTransaction tx) {
        this.engine = engine;
        this.tx = tx;
    }

    /**
     * Retries the run later, or parks it when it met database trouble too often in a row.
     *
     * @param lockHeld whether the transaction is still usable and holds the run's row lock (the step's writes were
     *        already undone): then the postponement is written under that lock, so no other engine can run the step
     *        before the backoff ends; otherwise the transaction is rolled back first, and the postponement applies
     *        only if nobody moved the run meanwhile
     */
    void retry(Connection c, ClaimedRun run, String step, Throwable cause, boolean lockHeld) throws SQLException {
        if (!lockHeld) {
            tx.undo(c, cause, null, null);
        }
        engine.listeners().databaseRetry(run.saga(), cause);
        if (run.retries() + 1 >= MAX_RETRIES) {
            park(c, run, step, cause);
            return;
        }
        long ceiling = Math.min(MAX_RETRY_DELAY_MILLIS, 100L << Math.min(run.retries(), 10));
        long delay = ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
        if (cause instanceof OutOfMemoryError) {
            log.error("Run {} (saga {}, {}) ran out of memory; retrying in {} ms", run.id(), run.saga(), step, delay);
        } else {
            log.warn("Run {} (saga {}, {}) hit a database problem ({}); retrying in {} ms", run.id(), run.saga(),
                    step, Throwables.describe(cause), delay);
        }
        if (cause instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        write(c, () -> engine.store().postpone(c, run, delay, lockHeld));
        engine.dispatcher().dueIn(delay);
    }

    /** Parks the run for an operator: database trouble on {@link #MAX_RETRIES} attempts in a row. */
    private void park(Connection c, ClaimedRun run, String step, Throwable cause) throws SQLException {
        String source = engine.source(run);
        Failure failure = new Failure("Database trouble on " + MAX_RETRIES + " attempts in a row at " + step
                + "; parked for an operator (retry it with retryNow once the database is healthy)",
                "dev.coop.DatabaseTrouble", source, List.of(), List.of(Failure.of(cause, source)));
        log.error("Run {} (saga {}, {}) met database trouble {} times in a row ({}); parking it", run.id(),
                run.saga(), step, MAX_RETRIES, Throwables.describe(cause));
        write(c, () -> {
            if (engine.store().parkAfterRetries(c, run, failure.toJson())) {
                engine.store().attempts().parked(c, run, engine.engineId(), step, run.attempt(), failure.toJson());
            }
        });
    }

    /** Writes and commits (in a round: leaves the commit to the round); a failure rolls back, or aborts the round. */
    private void write(Connection c, Write write) throws SQLException {
        try {
            write.run();
            tx.commitNow(c);
        } catch (SQLException e) {
            tx.undo(c, e, null, null);
            throw e;
        }
    }

    @FunctionalInterface
    private interface Write {
        void run() throws SQLException;
    }
}
