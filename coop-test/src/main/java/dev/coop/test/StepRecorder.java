package dev.coop.test;

import dev.coop.StepContext;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts how often each step body ran for each run, to check that no step executes twice for one run. Call
 * {@link #record(StepContext)} first thing in a step body; thread-safe, so one recorder can serve every engine of a
 * cluster test.
 *
 * <p>
 * A body that ran but whose transaction did not commit (the engine lost its connection, say) is counted too: the
 * recorder sees executions, not commits.
 */
public final class StepRecorder {
    /** One step of one run. */
    public record Execution(UUID runId, String saga, String step) {
        @Override
        public String toString() {
            return saga + "/" + step + " of run " + runId;
        }
    }

    private final ConcurrentHashMap<Execution, AtomicInteger> counts = new ConcurrentHashMap<>();
    private final AtomicInteger total = new AtomicInteger();

    /** Records that the step of {@code step} runs now. */
    public void record(StepContext<?> step) {
        Objects.requireNonNull(step, "step");
        counts.computeIfAbsent(new Execution(step.runId(), step.saga(), step.step()), e -> new AtomicInteger())
                .incrementAndGet();
        total.incrementAndGet();
    }

    /** How many step bodies ran in all. */
    public int total() {
        return total.get();
    }

    /** How many distinct (run, step) pairs ran at least once. */
    public int distinct() {
        return counts.size();
    }

    /** How often the step named {@code step} ran for the run {@code runId} (0 if never). */
    public int count(UUID runId, String step) {
        return counts.entrySet().stream()
                .filter(e -> e.getKey().runId().equals(runId) && e.getKey().step().equals(step))
                .mapToInt(e -> e.getValue().get()).sum();
    }

    /** Every (run, step) pair and how often it ran. */
    public Map<Execution, Integer> counts() {
        Map<Execution, Integer> copy = new TreeMap<>(
                (a, b) -> (a.runId() + a.step()).compareTo(b.runId() + b.step()));
        counts.forEach((k, v) -> copy.put(k, v.get()));
        return copy;
    }

    /**
     * Asserts that every step body ran exactly once for its run.
     *
     * @throws AssertionError naming the steps that ran more than once
     */
    public void assertEachStepRanOnce() {
        List<String> twice = counts.entrySet().stream().filter(e -> e.getValue().get() != 1)
                .map(e -> e.getKey() + " ran " + e.getValue().get() + " times").sorted().toList();
        if (!twice.isEmpty()) {
            throw new AssertionError(twice.size() + " of " + counts.size()
                    + " step executions ran more than once: " + String.join("; ", twice.subList(0,
                            Math.min(20, twice.size()))));
        }
    }
}
