package dev.coop.internal;

import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Lets a thread waiting for a message's runs be woken as soon as a run of that message finishes in this JVM,
 * instead of waiting for its next check of the database.
 */
public final class Completions {
    private final ConcurrentHashMap<UUID, Waiter> waiters = new ConcurrentHashMap<>();

    /** Called after a run of {@code messageId} finished and committed. */
    public void finished(UUID messageId) {
        Waiter w = waiters.get(messageId);
        if (w != null) {
            w.signal();
        }
    }

    /** Registers interest in a message; close the returned waiter when done. */
    public Waiter watch(UUID messageId) {
        return waiters.compute(messageId, (id, w) -> w == null ? new Waiter(id) : w.retain());
    }

    /** A registration: {@link #await} returns early when a run of the message finished. */
    public final class Waiter implements AutoCloseable {
        private final UUID messageId;
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition signalled = lock.newCondition();
        private int users = 1;
        private long version;

        private Waiter(UUID messageId) {
            this.messageId = messageId;
        }

        private Waiter retain() {
            users++;
            return this;
        }

        private void signal() {
            lock.lock();
            try {
                version++;
                signalled.signalAll();
            } finally {
                lock.unlock();
            }
        }

        /** The current version; pass it to {@link #await} to wait for a change after it. */
        public long version() {
            lock.lock();
            try {
                return version;
            } finally {
                lock.unlock();
            }
        }

        /** Waits until signalled after {@code seen}, or for {@code nanos}. */
        public void await(long seen, long nanos) throws InterruptedException {
            lock.lock();
            try {
                long left = nanos;
                while (version == seen && left > 0) {
                    left = signalled.awaitNanos(left);
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void close() {
            waiters.computeIfPresent(messageId, (id, w) -> --w.users == 0 ? null : w);
        }
    }
}
