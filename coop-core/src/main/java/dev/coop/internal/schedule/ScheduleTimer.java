package dev.coop.internal.schedule;

import dev.coop.internal.store.Tx;
import dev.coop.internal.store.Store;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An engine's schedule thread: fires due periods, then asks the database how long until the next one is due and
 * waits that long (at most the poll interval), holding no connection. A nudge (a schedule created or changed: a
 * client in this JVM, or the {@value #NOTIFICATION} notification from another) makes it read the next due time
 * again at once. Several engines may run one each: the row lock of a due schedule decides who fires a period.
 */
public final class ScheduleTimer implements Runnable {
    /** The notification payload that announces a schedule became due earlier; never a saga name. */
    public static final String NOTIFICATION = "#schedules";

    private static final Logger log = LoggerFactory.getLogger(ScheduleTimer.class);
    /** At most this many periods are fired per connection checkout before the thread looks at stop requests. */
    private static final int BATCH = 100;
    /** A due schedule held by another engine is re-read after this pause, not in a busy loop. */
    private static final long BUSY_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private final DataSource dataSource;
    private final Schedules schedules;
    private final Store store;
    private final String engineId;
    private final long pollNanos;
    private final Consumer<String> localWake;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private boolean nudged;
    private boolean stopped;

    public ScheduleTimer(DataSource dataSource, Store engineStore, String engineId, long pollNanos,
            Consumer<String> localWake) {
        this.dataSource = dataSource;
        this.schedules = new Schedules(engineStore.schema(), engineStore.time());
        this.store = new Store(engineStore.schema(), engineStore.time()); // a schedule's launch is never refused
        this.engineId = engineId;
        this.pollNanos = pollNanos;
        this.localWake = localWake;
    }

    @Override
    public void run() {
        long backoffNanos = TimeUnit.MILLISECONDS.toNanos(100);
        while (!stopped()) {
            clearNudge();
            long waitNanos;
            try {
                waitNanos = fireDueAndMeasure();
                backoffNanos = TimeUnit.MILLISECONDS.toNanos(100);
            } catch (Throwable e) { // an Error too: the timer thread lives on
                if (stopped()) {
                    return;
                }
                log.warn("Engine {} could not fire due schedules ({}); trying again in {} ms", engineId,
                        e.toString(), TimeUnit.NANOSECONDS.toMillis(backoffNanos), e instanceof Error ? e : null);
                waitNanos = backoffNanos;
                backoffNanos = Math.min(backoffNanos * 2, Math.max(pollNanos, TimeUnit.SECONDS.toNanos(5)));
            }
            await(waitNanos);
        }
    }

    /**
     * Reads how long until the next period is due (one index probe, the only statement of an idle cycle); when one
     * is due, fires every due period, each in its own transaction, and reads again. Returns how long to wait.
     */
    private long fireDueAndMeasure() throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            try {
                for (int round = 0; round < BATCH && !stopped(); round++) {
                    c.setAutoCommit(true);
                    Long millis = schedules.millisUntilNextDue(c);
                    if (millis == null) {
                        return pollNanos;
                    }
                    if (millis > 0) {
                        return Math.min(pollNanos, TimeUnit.MILLISECONDS.toNanos(millis));
                    }
                    c.setAutoCommit(false);
                    if (fireDue(c) == 0) {
                        return BUSY_PAUSE_NANOS; // due, but locked by another engine firing it right now
                    }
                }
                return 0;
            } finally {
                Tx.rollbackQuietly(c); // restoring auto-commit must not commit a half-fired period
                c.setAutoCommit(autoCommit);
            }
        }
    }

    /** Fires due periods, one transaction each, until none is left (or a batch is done); returns how many. */
    private int fireDue(Connection c) throws SQLException {
        int handled = 0;
        try {
            while (handled < BATCH && !stopped()) {
                Schedules.Fired fired = schedules.fireNext(c, store, engineId);
                c.commit();
                if (fired == null) {
                    break;
                }
                handled++;
                if (fired.message() != null) {
                    log.debug("Engine {} fired schedule '{}': message {}", engineId, fired.schedule(),
                            fired.message());
                }
                fired.created().keySet().forEach(localWake);
            }
            return handled;
        } catch (Throwable e) {
            Tx.rollbackQuietly(c);
            throw e;
        }
    }

    /** Read the next due time again now. */
    public void nudge() {
        lock.lock();
        try {
            nudged = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    public void stop() {
        lock.lock();
        try {
            stopped = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private boolean stopped() {
        lock.lock();
        try {
            return stopped;
        } finally {
            lock.unlock();
        }
    }

    private void clearNudge() {
        lock.lock();
        try {
            nudged = false;
        } finally {
            lock.unlock();
        }
    }

    private void await(long nanos) {
        lock.lock();
        try {
            long left = nanos;
            while (!stopped && !nudged && left > 0) {
                left = changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopped = true;
        } finally {
            lock.unlock();
        }
    }
}
