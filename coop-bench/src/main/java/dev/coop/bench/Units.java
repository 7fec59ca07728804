package dev.coop.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A closed loop for any system: {@code threads} client threads each run one unit of work to its durable end (start
 * it and wait for it), then the next, until {@code total} ran. Elapsed time runs from the first start to the last
 * end; per-unit latency is start to end. The peers' runners use it; Coop's own runs use {@link ClosedLoop}.
 */
final class Units {
    interface Unit {
        void run(int index) throws Exception;
    }

    record Result(long elapsedNanos, long[] latencies, List<String> failures) {
        double perSecond(double units) {
            return units / (elapsedNanos / 1e9);
        }
    }

    private Units() {
    }

    static Result run(int total, int threads, Unit unit) {
        AtomicInteger next = new AtomicInteger();
        long[] latencies = new long[total];
        AtomicLong first = new AtomicLong(Long.MAX_VALUE);
        AtomicLong last = new AtomicLong(Long.MIN_VALUE);
        ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        CountDownLatch gate = new CountDownLatch(1);
        List<Thread> list = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread th = Thread.ofPlatform().name("bench-peer-client-" + t).daemon(true).unstarted(() -> {
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    return;
                }
                int i;
                while ((i = next.getAndIncrement()) < total) {
                    long start = System.nanoTime();
                    first.accumulateAndGet(start, Math::min);
                    try {
                        unit.run(i);
                    } catch (Exception | AssertionError e) {
                        failures.add("unit " + i + ": " + e);
                    }
                    long end = System.nanoTime();
                    last.accumulateAndGet(end, Math::max);
                    latencies[i] = end - start;
                }
            });
            list.add(th);
            th.start();
        }
        gate.countDown();
        for (Thread th : list) {
            try {
                th.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
        return new Result(last.get() - first.get(), latencies, new ArrayList<>(failures));
    }
}
