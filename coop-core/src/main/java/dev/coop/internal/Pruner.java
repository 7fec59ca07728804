package dev.coop.internal;

import dev.coop.PruneResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
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
final class Pruner implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(Pruner.class);
    /** Batches deleted in a row before the thread looks at stop requests and lets other work have the database. */
    private static final int ROUNDS = 100;

    private final DataSource dataSource;
    private final Retention retention;
    private final String engineId;
    private final Duration keep;
    private final long intervalNanos;
    private final CountDownLatch stopping = new CountDownLatch(1);

    Pruner(DataSource dataSource, SchemaName schema, Time time, String engineId, Duration keep, Duration interval) {
        this.dataSource = dataSource;
        this.retention = new Retention(schema, time);
        this.engineId = engineId;
        this.keep = keep;
        this.intervalNanos = interval.toNanos();
    }

    /** The pause between pruning passes for hierarchies kept {@code keep}: a tenth of it, within poll and 10 min. */
    static Duration interval(Duration keep, Duration poll) {
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

    private void pass() throws SQLException {
        long deleted = 0;
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                Instant cutoff = retention.now(c).minus(keep);
                for (int round = 0; round < ROUNDS && !stopped(); round++) {
                    PruneResult batch = retention.pruneBatch(c, cutoff);
                    c.commit();
                    deleted += batch.hierarchies();
                    if (batch.hierarchies() == 0) {
                        break;
                    }
                }
            } finally {
                Worker.rollbackQuietly(c); // never let restoring auto-commit commit what is left open
                c.setAutoCommit(autoCommit);
            }
        }
        if (deleted > 0) {
            log.info("Engine {} deleted {} finished hierarchies older than {}", engineId, deleted, keep);
        }
    }

    void stop() {
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
