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
    /**
     * Messages launched by this JVM's engine client, with the sagas that got a run of each and the final statuses
     * of those runs that finished in this JVM: a client waiting for such a message learns its outcome here, without
     * reading the database, when every run finished here. Bounded (the oldest are forgotten: waiting for them reads
     * the database, as for any other message).
     */
    private final java.util.LinkedHashMap<UUID, Tracked> tracked = new java.util.LinkedHashMap<>(256, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(java.util.Map.Entry<UUID, Tracked> eldest) {
            return size() > MAX_TRACKED;
        }
    };
    private static final int MAX_TRACKED = 16_384;

    /** The runs of one tracked message: its sagas once launched (null before), and the statuses finished here. */
    private static final class Tracked {
        java.util.Set<String> sagas;
        final java.util.Map<String, dev.coop.RunStatus> finished = new java.util.HashMap<>(4);
    }

    /** Called after a run of {@code saga} for {@code messageId} finished with {@code status} and committed. */
    public void finished(UUID messageId, String saga, dev.coop.RunStatus status) {
        synchronized (tracked) {
            Tracked t = tracked.get(messageId);
            if (t != null) {
                t.finished.put(saga, status);
            }
        }
        Waiter w = waiters.get(messageId);
        if (w != null) {
            w.signal();
        }
    }

    /** Called after a run of {@code messageId} finished and committed, its status not at hand: waiters read it. */
    public void finished(UUID messageId) {
        Waiter w = waiters.get(messageId);
        if (w != null) {
            w.signal();
        }
    }

    /** A message about to be launched by this JVM: remember the runs of it that finish here (before it commits). */
    public void track(UUID messageId) {
        synchronized (tracked) {
            tracked.put(messageId, new Tracked());
        }
    }

    /** The tracked message was launched, committed, with a run for each of {@code sagas}. */
    public void launched(UUID messageId, java.util.Set<String> sagas) {
        synchronized (tracked) {
            Tracked t = tracked.get(messageId);
            if (t != null) {
                t.sagas = java.util.Set.copyOf(sagas);
            }
        }
    }

    /** Forgets a message: its launch failed or launched nothing new, or its outcome was taken. */
    public void untrack(UUID messageId) {
        synchronized (tracked) {
            tracked.remove(messageId);
        }
    }

    /** Whether the outcome of a message may come from here (it was launched here, and is still remembered). */
    public boolean tracks(UUID messageId) {
        synchronized (tracked) {
            Tracked t = tracked.get(messageId);
            return t != null && t.sagas != null;
        }
    }

    /** The final statuses of every run of a tracked message when all of them finished in this JVM, else null. */
    public java.util.List<dev.coop.RunStatus> outcome(UUID messageId) {
        synchronized (tracked) {
            Tracked t = tracked.get(messageId);
            if (t == null || t.sagas == null || !t.finished.keySet().containsAll(t.sagas)) {
                return null;
            }
            return t.sagas.stream().map(t.finished::get).toList();
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
