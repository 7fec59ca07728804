package dev.coop.internal.step;

import dev.coop.internal.store.Due;

import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Hands work to an engine's workers without scanning anything: it keeps the set of sagas that may have due runs
 * (marked by notifications, local commits and probes) and the time of the next probe. Idle workers wait here,
 * holding no connection.
 */
public final class Dispatcher {
    /**
     * What a worker should do next: claim a run of {@code saga}, or probe the database when saga is null. A
     * {@code counted} claim is owed for one run this engine made runnable itself; the others look for runs until
     * a claim finds none. A {@code retry} is a counted claim owed again because the one before it found nothing
     * (see {@link #empty}). {@code runs}: how many runs the claim may take at once (a round, see {@link RoundSize}).
     */
    record Task(String saga, long epoch, boolean counted, boolean retry, int runs) {
        boolean isProbe() {
            return saga == null;
        }
    }

    private static final Task PROBE = new Task(null, 0, false, false, 1);

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    /** The sagas that may have due runs, and the claims owed for them. */
    private final ReadySagas sagas;
    /** The sagas with a worker limit of their own, and how many workers work on each now. */
    private final WorkerLimits limits = new WorkerLimits();
    /** How many runs a claim may take at once, per saga: its cap, and what its searched claims take now. */
    private final RoundSize rounds = new RoundSize();
    /** How many workers wait in {@link #next()} for something to do. */
    private int idle;
    /** Limited sagas whose last claim found nothing (slots busy, rate window full): tried again when a step ends. */
    private final java.util.Set<String> blocked = new java.util.HashSet<>();
    /** When the next probe is due, and whether one runs. */
    private final ProbeSchedule probes;
    private boolean stopped;
    /**
     * What {@link #pause} waits on: signalled only by {@link #stop}. A thread pausing on {@code changed} would take
     * the single {@code signal()} a wake-up sends to one idle worker, and that worker would wait for the next poll.
     */
    private final java.util.concurrent.locks.Condition stopping = lock.newCondition();

    /** Starts workers in place of those that stay with a slow step ({@link RoundSplit}); set by the engine. */
    public interface Replacements {
        /** Starts a worker in place of the calling one, unless the engine may not; whether it did. */
        boolean replace();

        /** A worker that was replaced ended. */
        void retired();
    }

    private volatile Replacements replacements;

    public void replacements(Replacements replacements) {
        this.replacements = replacements;
    }

    /** Starts a worker in place of the calling one, which stays with a slow step; whether one was started. */
    boolean replaceWorker() {
        Replacements r = replacements;
        return r != null && !stopped() && r.replace();
    }

    void workerRetired() {
        Replacements r = replacements;
        if (r != null) {
            r.retired();
        }
    }

    public Dispatcher(List<String> sagas, long pollNanos) {
        this.sagas = new ReadySagas(sagas);
        this.probes = new ProbeSchedule(pollNanos);
    }

    /** Blocks until there is something to do; null once stopped. */
    Task next() throws InterruptedException {
        lock.lock();
        try {
            while (!stopped) {
                String saga = sagas.first(limits::available);
                if (saga != null) {
                    Task task = sagas.take(saga, rounds, idle);
                    limits.started(saga);
                    return task;
                }
                long now = System.nanoTime();
                if (probes.start(now)) {
                    return PROBE;
                }
                idle++;
                try {
                    changed.awaitNanos(probes.waitNanos(now));
                } finally {
                    idle--;
                }
            }
            return null;
        } finally {
            lock.unlock();
        }
    }

    /** At most {@code workers} workers of this engine work on {@code saga} at once (0: no limit of its own). */
    public void limit(String saga, int workers) {
        lock.lock();
        try {
            if (workers > 0) {
                limits.limit(saga, workers);
            }
        } finally {
            lock.unlock();
        }
    }

    /** At most {@code runs} runs of {@code saga} advance in one transaction (1: one run per transaction). */
    public void rounds(String saga, int runs) {
        lock.lock();
        try {
            rounds.cap(saga, runs);
        } finally {
            lock.unlock();
        }
    }

    /**
     * A claim for the task's saga took {@code claimed} of the {@code task.runs()} runs it was handed (at least one):
     * a searched saga's next claims take more when this one took all it could, fewer when it did not; a counted claim
     * that took fewer was beaten to the others, which may be owed again as for {@link #empty}.
     */
    void claimedRound(Task task, int claimed) {
        lock.lock();
        try {
            if (!task.counted()) {
                rounds.searchedTook(task.saga(), task.runs(), claimed);
            } else if (claimed < task.runs() && !task.retry()) {
                Long epoch = sagas.epoch(task.saga());
                int missing = task.runs() - claimed;
                if (epoch != null && epoch != task.epoch() && owe(task.saga(), missing)) {
                    sagas.retry(task.saga(), missing);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** A worker finished the task {@link #next()} gave it: the saga has a worker more under its limit. */
    void done(Task task) {
        if (task.isProbe()) {
            return;
        }
        lock.lock();
        try {
            if (limits.ended(task.saga()) && sagas.isReady(task.saga())) {
                changed.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Runs of {@code saga} may be due, how many is not known (a notification, a probe, a commit in this engine that
     * made several runnable): workers claim until a claim finds nothing.
     */
    public void wake(String saga) {
        lock.lock();
        try {
            if (sagas.markSearched(saga)) {
                changed.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Exactly {@code runs} runs of {@code saga} became due now, made runnable by this engine (committed): that many
     * claims are owed, and no more are made for them. A saga already being searched stays so.
     */
    public void wake(String saga, int runs) {
        if (runs <= 0) {
            return;
        }
        lock.lock();
        try {
            owe(saga, runs);
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@link #wake(String, int)} with the lock held.
     *
     * @return whether the claims were owed (false: not a saga of this engine, or searched already)
     */
    private boolean owe(String saga, int runs) {
        boolean searched = sagas.isSearched(saga);
        if (!sagas.markReady(saga)) {
            return false;
        }
        if (!searched) {
            sagas.owe(saga, runs);
        }
        changed.signal();
        return !searched;
    }

    /** Probe soon, e.g. after notifications may have been missed or the time jumped. */
    public void probeNow() {
        lock.lock();
        try {
            probes.soon();
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Something of {@code saga} is due in {@code millis}: make sure a probe happens by then. */
    public void dueIn(long millis) {
        lock.lock();
        try {
            if (probes.dueIn(millis)) {
                changed.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * A continuing worker's run was taken by another claim, perhaps one owed for another run of the saga: owe one
     * claim in its place (claims that search need none).
     */
    void giveBack(String saga) {
        wake(saga, 1);
    }

    /**
     * A claim for the task's saga succeeded: when the saga is searched there may be more, so let another idle worker
     * try too (a counted claim's siblings were signalled when they were owed).
     */
    void found(Task task) {
        if (task.counted()) {
            return;
        }
        lock.lock();
        try {
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    /**
     * A claim for the task's saga found nothing; forget the saga unless it was woken again meanwhile.
     *
     * <p>A counted claim that found nothing was beaten to its run by another claim. When nothing woke the saga since
     * the claim was handed out, that is all: every run owed a claim was visible to it, and the claim that took its run
     * owes nothing more. When something did, the claim may have read the database before the commit of a run woken
     * since (its statement's snapshot), while the claim owed for that run took the run this one was owed for (the
     * earliest due first): that run would wait for the next probe. The claim is owed once more, as a retry, which is
     * handed out after that wake-up and so sees the run; a retry that finds nothing is not owed again (under a steady
     * stream of launches the saga is woken all the time, and retries would follow each other for nothing).
     */
    void empty(Task task) {
        if (task.counted()) {
            if (task.retry()) {
                return;
            }
            lock.lock();
            try {
                Long epoch = sagas.epoch(task.saga());
                if (epoch != null && epoch != task.epoch() && owe(task.saga(), task.runs())) {
                    sagas.retry(task.saga(), task.runs());
                }
            } finally {
                lock.unlock();
            }
            return;
        }
        lock.lock();
        try {
            rounds.searchedTook(task.saga(), task.runs(), 0);
            sagas.forgetUnlessWoken(task.saga(), task.epoch());
        } finally {
            lock.unlock();
        }
    }

    /**
     * A claim of a limited saga found nothing, perhaps for its limits: try it again when a step of it ends here, and
     * probe within {@code retryMillis} at the latest.
     */
    void blocked(String saga, long retryMillis) {
        lock.lock();
        try {
            blocked.add(saga);
        } finally {
            lock.unlock();
        }
        dueIn(retryMillis);
    }

    /** A step transaction of a limited saga ended in this engine: its slot is free, so a blocked saga may go on. */
    void stepEnded(String saga) {
        lock.lock();
        try {
            if (blocked.remove(saga) && sagas.markSearched(saga)) { // searched: the blocked runs were not counted
                changed.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Records a probe: sagas due now become ready; the next probe is at the earliest future due time. */
    void probed(Map<String, Due> dues) {
        lock.lock();
        try {
            long now = System.nanoTime();
            dues.forEach((saga, due) -> {
                if (due.firstMillis() <= 0) {
                    sagas.markSearched(saga); // searched: a probe does not say how many runs are due
                }
            });
            probes.probed(now, dues.values());
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** A probe failed: try again after {@code delayNanos}. */
    void probeFailed(long delayNanos) {
        lock.lock();
        try {
            probes.failed(delayNanos);
        } finally {
            lock.unlock();
        }
    }

    /** Waits up to {@code nanos} or until stopped; for backing off after failures. */
    public void pause(long nanos) throws InterruptedException {
        lock.lock();
        try {
            long left = nanos;
            while (!stopped && left > 0) {
                left = stopping.awaitNanos(left);
            }
        } finally {
            lock.unlock();
        }
    }

    public boolean stopped() {
        lock.lock();
        try {
            return stopped;
        } finally {
            lock.unlock();
        }
    }

    public void stop() {
        lock.lock();
        try {
            stopped = true;
            changed.signalAll();
            stopping.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
