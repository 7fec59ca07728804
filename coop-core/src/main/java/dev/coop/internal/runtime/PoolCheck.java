package dev.coop.internal.runtime;

import dev.coop.internal.step.Throwables;

import dev.coop.failure.CoopValidationException;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;

/**
 * Checks at an engine's start that its {@code DataSource} can give it the connections it needs at once (workers,
 * listener, client) when the pool's size cannot be read: it takes that many connections, in parallel, for a short
 * time, then gives them back. A connection that arrives after the check gave up is closed as soon as it arrives.
 */
public final class PoolCheck {
    private PoolCheck() {
    }

    /**
     * @param needs what the connections are for, for the message ("4 workers + 1 listener + 1 for clients")
     * @throws CoopValidationException when fewer than {@code needed} connections came within {@code timeout}
     */
    public static void require(DataSource dataSource, int needed, String needs, Duration timeout) {
        BlockingQueue<Object> arrived = new ArrayBlockingQueue<>(needed);
        AtomicBoolean over = new AtomicBoolean();
        for (int i = 0; i < needed; i++) {
            Thread.ofVirtual().name("coop-pool-check").start(() -> take(dataSource, arrived, over));
        }
        List<Connection> taken = new ArrayList<>();
        Throwable failure = null;
        int got = 0;
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            failure = collect(arrived, taken, needed, deadline);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            got = taken.size();
            giveBack(arrived, over, taken);
        }
        if (got < needed) {
            throw new CoopValidationException("The DataSource gave " + got + " of the " + needed
                    + " connections this engine needs at once (" + needs + ") within " + timeout.toMillis()
                    + " ms" + (failure == null ? "" : " (" + Throwables.describe(failure) + ")")
                    + "; its workers would wait for connections and process nothing. Give the pool at least "
                    + needed + " connections, or lower workers", failure);
        }
    }

    /**
     * Takes what arrives into {@code taken} until {@code needed} connections came, one attempt failed, or the
     * deadline passed; returns the failure, if one came.
     */
    private static Throwable collect(BlockingQueue<Object> arrived, List<Connection> taken, int needed,
            long deadline) throws InterruptedException {
        while (taken.size() < needed) {
            long left = deadline - System.nanoTime();
            Object next = left <= 0 ? null : arrived.poll(left, TimeUnit.NANOSECONDS);
            if (next == null) {
                break;
            }
            if (next instanceof Connection c) {
                taken.add(c);
            } else {
                return (Throwable) next;
            }
        }
        return null;
    }

    /** Ends the check: what arrives from now on is closed by its taker; what came is closed here. */
    private static void giveBack(BlockingQueue<Object> arrived, AtomicBoolean over, List<Connection> taken) {
        synchronized (over) {
            over.set(true);
            for (Object late; (late = arrived.poll()) != null;) {
                if (late instanceof Connection c) {
                    taken.add(c);
                }
            }
        }
        taken.forEach(PoolCheck::closeQuietly);
    }

    private static void take(DataSource dataSource, BlockingQueue<Object> arrived, AtomicBoolean over) {
        Object result;
        try {
            result = dataSource.getConnection();
        } catch (Throwable e) {
            result = e;
        }
        synchronized (over) {
            if (!over.get()) {
                arrived.add(result);
                return;
            }
        }
        if (result instanceof Connection c) {
            closeQuietly(c); // too late: give it back at once
        }
    }

    private static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // a broken connection: the pool drops it
        }
    }
}
