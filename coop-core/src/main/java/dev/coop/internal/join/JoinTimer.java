package dev.coop.internal.join;

import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Tx;

import dev.coop.failure.CoopStoreException;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An engine's thread that times joins out. It reads when the earliest open join is due (one probe of the partial
 * index {@code join_group_due}), sleeps until then or for the poll interval, whichever comes first, and fires the due
 * joins with {@code FOR UPDATE SKIP LOCKED}, so that engines sharing a schema never publish a join's outcome twice.
 * Due decisions use the engine's time ({@link dev.coop.internal.store.Time}). A join started in this JVM moves the next
 * wake-up earlier ({@link #expect}); joins started elsewhere announce themselves with the {@value #NOTIFICATION}
 * notification (or are seen at the next probe, within the poll interval).
 */
public final class JoinTimer implements Runnable {
    /** The notification payload that announces a join with a timeout; never a saga name. */
    public static final String NOTIFICATION = "#joins";

    private static final Logger log = LoggerFactory.getLogger(JoinTimer.class);
    /** Timers running in this JVM, so that clients can tell them about new timeouts. */
    private static final Set<JoinTimer> RUNNING = ConcurrentHashMap.newKeySet();
    /** The pause when a due join is held by another transaction (it is being fired, or settled, elsewhere). */
    private static final long BUSY_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final String engineId;
    private final DataSource dataSource;
    private final SchemaName schema;
    private final JoinBook book;
    private final long pollNanos;
    private final Consumer<String> wake;
    private final Object monitor = new Object();
    // guarded by monitor: the System.nanoTime() of the next probe while pausing, and the earliest hint not yet passed
    private long wakeAt;
    private boolean pausing;
    private long hint;
    private boolean hinted;
    /** Read the earliest timeout again without pausing: asked for while a probe ran (a notification, a time jump). */
    private boolean nudged;
    private boolean stopped;

    public JoinTimer(String engineId, DataSource dataSource, SchemaName schema, JoinBook book, long pollNanos,
            Consumer<String> wake) {
        this.engineId = engineId;
        this.dataSource = dataSource;
        this.schema = schema;
        this.book = book;
        this.pollNanos = pollNanos;
        this.wake = wake;
    }

    /**
     * Tells the timers of this JVM on {@code schema} that a join was started (or is about to be committed) with this
     * timeout: each wakes no later than then. Only a hint; the database decides what is due.
     */
    public static void expect(SchemaName schema, long timeoutMillis) {
        long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis + 1);
        for (JoinTimer timer : RUNNING) {
            if (timer.schema.equals(schema)) {
                timer.wakeBy(due);
            }
        }
    }

    private void wakeBy(long due) {
        synchronized (monitor) {
            if (!hinted || due - hint < 0) {
                hint = due;
                hinted = true;
            }
            if (pausing && due - wakeAt < 0) {
                wakeAt = due;
                monitor.notifyAll();
            }
        }
    }

    /** Read the earliest timeout again now (a join with a timeout was started, maybe in another process). */
    public void nudge() {
        synchronized (monitor) {
            nudged = true;
            monitor.notifyAll();
        }
    }

    public void stop() {
        synchronized (monitor) {
            stopped = true;
            monitor.notifyAll();
        }
    }

    @Override
    public void run() {
        RUNNING.add(this);
        boolean failing = false;
        try {
            while (!isStopped()) {
                long pause = pollNanos;
                try {
                    pause = Math.min(pollNanos, fireAndProbe());
                    failing = false;
                } catch (Throwable e) { // an Error too: the timer thread lives on
                    if (!failing || e instanceof Error) {
                        log.warn("Engine {} could not fire join timeouts; trying again in {} ms: {}", engineId,
                                TimeUnit.NANOSECONDS.toMillis(pollNanos), e.toString(), e instanceof Error ? e : null);
                    }
                    failing = true;
                }
                if (!pauseFor(pause)) {
                    return;
                }
            }
        } finally {
            RUNNING.remove(this);
        }
    }

    /**
     * Reads when the next join is due; fires what is due, then reads again. Returns how long to wait (at most the poll
     * interval). An idle cycle is one index probe in auto-commit mode.
     */
    private long fireAndProbe() {
        Long millis = probe();
        if (millis != null && millis <= 0) {
            JoinBook.Fired fired;
            do {
                fired = Tx.run(dataSource, "fire join timeouts", book::fireTimeouts);
                fired.sagas().forEach(wake);
                if (fired.count() > 0) {
                    log.debug("Engine {} timed out {} join(s)", engineId, fired.count());
                }
            } while (fired.count() == JoinBook.TIMEOUT_BATCH && !isStopped());
            millis = probe();
        }
        if (millis == null) {
            return pollNanos;
        }
        // still due: another transaction holds the join; else wake a millisecond after it is due
        return millis <= 0 ? BUSY_PAUSE_NANOS : TimeUnit.MILLISECONDS.toNanos(millis + 1);
    }

    private Long probe() {
        try (Connection c = dataSource.getConnection()) {
            return book.millisUntilNextTimeout(c);
        } catch (SQLException e) {
            throw new dev.coop.failure.CoopStoreException("Could not read the next join timeout: " + e.getMessage(), e);
        }
    }

    /** Waits {@code nanos}, or less when {@link #expect} asks for it; false when stopped. */
    private boolean pauseFor(long nanos) {
        synchronized (monitor) {
            long now = System.nanoTime();
            wakeAt = now + nanos;
            if (hinted) {
                if (hint - now <= 0) {
                    hinted = false; // passed: the probe that just ran saw what it announced, if it was committed
                } else if (hint - wakeAt < 0) {
                    wakeAt = hint;
                }
            }
            pausing = true;
            try {
                while (!stopped) {
                    long left = wakeAt - System.nanoTime();
                    if (left <= 0 || nudged) {
                        nudged = false;
                        return true;
                    }
                    TimeUnit.NANOSECONDS.timedWait(monitor, left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stopped = true;
            } finally {
                pausing = false;
            }
            return false;
        }
    }

    private boolean isStopped() {
        synchronized (monitor) {
            return stopped;
        }
    }
}
