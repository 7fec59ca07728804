package dev.coop.internal.step;

import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads user code runs on when a worker supervises it ({@link SupervisedCall}): platform threads (user code
 * may block in {@code synchronized} code or native calls without holding up others), kept a minute when idle and
 * reused, one more whenever all are busy. A thread that user code holds past its timeout is left to it: the next
 * step gets another.
 */
final class StepThreads {
    private static final AtomicInteger COUNT = new AtomicInteger();
    private static final ThreadFactory FACTORY = body -> {
        Thread t = new Thread(body, "coop-step-" + COUNT.incrementAndGet());
        t.setDaemon(true);
        return t;
    };
    private static final ThreadPoolExecutor POOL = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS,
            new SynchronousQueue<>(), FACTORY);

    private StepThreads() {
    }

    /** Runs {@code body} on a step thread now. */
    static void start(Runnable body) {
        POOL.execute(body);
    }
}
