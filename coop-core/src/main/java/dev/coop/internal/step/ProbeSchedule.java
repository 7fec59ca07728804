package dev.coop.internal.step;

import dev.coop.internal.store.Due;
import java.util.Collection;
import java.util.concurrent.TimeUnit;

/**
 * When an engine's next probe is due (the read of which sagas have due runs, and when the next ones are due), and
 * whether one runs now. Times are {@link System#nanoTime()}'s. Not thread-safe: the {@link Dispatcher}'s lock guards
 * every call.
 */
final class ProbeSchedule {
    private final long pollNanos;
    private long nextProbe;
    private boolean probing;
    /** A probe was asked for while one ran: what it read may be stale (the time jumped), so probe again. */
    private boolean reprobe;
    /**
     * The earliest due time asked for ({@link #dueIn}) while a probe ran, or {@link Long#MAX_VALUE}: the probe may
     * have read the database before the commit that made it due, so its result must not push the next probe past it.
     */
    private long dueDuringProbe = Long.MAX_VALUE;

    ProbeSchedule(long pollNanos) {
        this.pollNanos = pollNanos;
        this.nextProbe = System.nanoTime(); // probe at once: there may be work from before this engine started
    }

    /** Whether a probe is due at {@code now} and none runs: if so, it runs from now on. */
    boolean start(long now) {
        if (!probing && now - nextProbe >= 0) {
            probing = true;
            return true;
        }
        return false;
    }

    /** How long an idle worker waits at {@code now} before it looks again. */
    long waitNanos(long now) {
        return probing ? pollNanos : nextProbe - now;
    }

    /** Probe at once (again, when one runs now). */
    void soon() {
        reprobe = probing;
        nextProbe = System.nanoTime();
    }

    /** Something is due in {@code millis}: the next probe is by then at the latest; whether it moved earlier. */
    boolean dueIn(long millis) {
        long at = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, millis));
        if (probing && (dueDuringProbe == Long.MAX_VALUE || at - dueDuringProbe < 0)) {
            dueDuringProbe = at;
        }
        if (at - nextProbe < 0) {
            nextProbe = at;
            return true;
        }
        return false;
    }

    /** The probe that ran read {@code dues} at {@code now}: the next is at the earliest future due time. */
    void probed(long now, Collection<Due> dues) {
        probing = false;
        long next = now + pollNanos;
        for (Due due : dues) {
            if (due.firstMillis() > 0) {
                next = Math.min(next, now + TimeUnit.MILLISECONDS.toNanos(due.firstMillis()));
            }
            if (due.nextMillis() != null) {
                next = Math.min(next, now + TimeUnit.MILLISECONDS.toNanos(Math.max(0, due.nextMillis())));
            }
        }
        nextProbe = reprobe ? now : earliest(next);
        reprobe = false;
    }

    /** The probe that ran failed: the next is in {@code delayNanos}. */
    void failed(long delayNanos) {
        probing = false;
        nextProbe = earliest(System.nanoTime() + delayNanos);
    }

    /** {@code next}, or a due time asked for during the probe that just ended if that is earlier; forgets it. */
    private long earliest(long next) {
        long due = dueDuringProbe;
        dueDuringProbe = Long.MAX_VALUE;
        return due != Long.MAX_VALUE && due - next < 0 ? due : next;
    }
}
