package dev.coop.internal.retention;

import dev.coop.internal.store.Tx;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;

import dev.coop.PruneResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An engine's retention thread: every interval it deletes the hierarchies that finished longer ago than the
 * configured age, {@value Retention#BATCH} roots per transaction, until none is left. Engines sharing a schema share
 * the work (candidates are locked with {@code SKIP LOCKED}). Errors are logged and retried at the next interval.
 */
public final class Pruner implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(Pruner.class);
    /** How long the thread rests after a batch, in multiples of the time the batch took. */
    private static final int REST_PER_WORK = 9;
    private static final long MAX_REST_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final DataSource dataSource;
    private final Retention retention;
    private final String engineId;
    private final Duration keep;
    private final long intervalNanos;
    private final CountDownLatch stopping = new CountDownLatch(1);

    public Pruner(DataSource dataSource, SchemaName schema, Time time, String engineId, Duration keep,
            Duration interval) {
        this.dataSource = dataSource;
        this.retention = new Retention(schema, time);
        this.engineId = engineId;
        this.keep = keep;
        this.intervalNanos = interval.toNanos();
    }

    /** The pause between pruning passes for hierarchies kept {@code keep}: a tenth of it, within poll and 10 min. */
    public static Duration interval(Duration keep, Duration poll) {
        Duration tenth = keep.dividedBy(10);
        Duration max = Duration.ofMinutes(10);
        return tenth.compareTo(poll) < 0 ? poll : tenth.compareTo(max) > 0 ? max : tenth;
    }

    @Override
    public void run() {
        while (!stopped()) {
            try {
                pass();
            } catch (Throwable e) { // an Error too: the thread lives on
                if (stopped()) {
                    return;
                }
                log.warn("Engine {} could not delete finished hierarchies older than {} ({}); trying again in {} ms",
                        engineId, keep, e.toString(), TimeUnit.NANOSECONDS.toMillis(intervalNanos),
                        e instanceof Error ? e : null);
            }
            await(intervalNanos);
        }
    }

    /**
     * Deletes batches until none is left, resting {@value #REST_PER_WORK} times as long as each batch took, so that
     * retention takes at most a tenth of this thread's time and the database's attention goes to the steps.
     */
    private void pass() throws SQLException {
        long deleted = 0;
        while (!stopped()) {
            long started = System.nanoTime();
            long batch = batch();
            if (batch == 0) {
                break;
            }
            deleted += batch;
            await(Math.min((System.nanoTime() - started) * REST_PER_WORK, MAX_REST_NANOS));
        }
        if (deleted > 0) {
            log.info("Engine {} deleted {} finished hierarchies older than {}", engineId, deleted, keep);
        }
    }

    /** One batch in a transaction of its own; the connection goes back to the pool while the thread rests. */
    private long batch() throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                PruneResult batch = retention.pruneBatch(c, retention.now(c).minus(keep));
                c.commit();
                return batch.hierarchies();
            } finally {
                Tx.rollbackQuietly(c); // never let restoring auto-commit commit what is left open
                c.setAutoCommit(autoCommit);
            }
        }
    }

    public void stop() {
        stopping.countDown();
    }

    private boolean stopped() {
        return stopping.getCount() == 0;
    }

    private void await(long nanos) {
        try {
            stopping.await(nanos, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            stopping.countDown();
        }
    }
}
