package dev.coop.bench;

import dev.coop.CoopClient;
import dev.coop.MessageId;
import dev.coop.inspect.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiFunction;
import java.util.function.IntFunction;

/**
 * A closed loop: {@code threads} client threads, each launching one message and blocking until everything it caused
 * finished, then the next, until {@code total} were launched. Elapsed time runs from the first launch to the last
 * completion.
 */
final class ClosedLoop {
    record Result(long elapsedNanos, long[] latencies, List<String> failures, long clientCpuNanos,
            List<MessageId> ids) {
        double perSecond(double units) {
            return units / (elapsedNanos / 1e9);
        }
    }

    private ClosedLoop() {
    }

    static Result run(int total, int threads, IntFunction<MessageId> launch, CoopClient client,
            Duration timeout) {
        return run(total, threads, t -> client, (c, i) -> launch.apply(i), timeout);
    }

    /**
     * The same with a client per thread ({@code clientOfThread}: thread index to client), so that with several engines
     * each thread launches and awaits through one engine's client (its completions wake its waiters locally).
     */
    static Result run(int total, int threads, IntFunction<CoopClient> clientOfThread,
            BiFunction<CoopClient, Integer, MessageId> launch, Duration timeout) {
        AtomicInteger next = new AtomicInteger();
        long[] latencies = new long[total];
        MessageId[] ids = new MessageId[total];
        AtomicLong first = new AtomicLong(Long.MAX_VALUE);
        AtomicLong last = new AtomicLong(Long.MIN_VALUE);
        ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        LongAdder cpu = new LongAdder();
        CountDownLatch gate = new CountDownLatch(1);
        List<Thread> list = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            CoopClient client = clientOfThread.apply(t);
            Thread th = Thread.ofPlatform().name("bench-client-" + t).daemon(true).unstarted(() -> {
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    return;
                }
                long cpu0 = Cpu.currentThreadNanos();
                int i;
                while ((i = next.getAndIncrement()) < total) {
                    long start = System.nanoTime();
                    first.accumulateAndGet(start, Math::min);
                    try {
                        MessageId id = launch.apply(client, i);
                        ids[i] = id;
                        Outcome outcome = client.awaitCompletion(id, timeout);
                        long end = System.nanoTime();
                        last.accumulateAndGet(end, Math::max);
                        latencies[i] = end - start;
                        if (outcome != Outcome.COMMITTED) {
                            failures.add("message " + id + " ended " + outcome);
                        }
                    } catch (RuntimeException e) {
                        failures.add("launch " + i + ": " + e);
                        last.accumulateAndGet(System.nanoTime(), Math::max);
                    }
                }
                cpu.add(Cpu.currentThreadNanos() - cpu0);
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
        return new Result(last.get() - first.get(), latencies, new ArrayList<>(failures), cpu.sum(),
                java.util.Arrays.asList(ids));
    }
}
