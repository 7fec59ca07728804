package dev.coop.internal.step;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * How many runs of a saga a claim takes at once (a round: one step of each, one commit), following the backlog so
 * that a run due alone goes alone, at once. Whether runs due together are spread over the idle workers or share a
 * commit depends on how long the saga's step bodies take:
 * <ul>
 * <li>bodies that take a while (I/O, sleeps): a claim owed a known number of runs shares them with the idle workers
 * (each takes its part), so that bodies run in parallel first and share commits only beyond that;</li>
 * <li>quick bodies (under {@link #QUICK_NANOS} on average): parallel bodies gain nothing, and each transaction costs
 * the database a claim, an advance and a commit; a claim takes every owed run (up to the cap) and the other workers
 * stay free for other sagas. Executed one after another, quick bodies barely delay each other's commit.</li>
 * </ul>
 * A claim that searches (a notification or probe said runs are due, not how many) takes its share of the cap (all of
 * it for quick bodies), and doubles while its claims take all they asked for. Never more than the saga's cap.
 * Guarded by the dispatcher's lock, but for the body times, which workers report as their steps end.
 */
final class RoundSize {
    /** A saga whose step bodies take less than this on average has quick bodies. */
    static final long QUICK_NANOS = 1_000_000L;

    private final Map<String, Integer> caps = new HashMap<>();
    private final Map<String, Integer> searching = new HashMap<>();
    /** Per saga, the moving average of its step bodies' durations (nanoseconds); none until one ended. */
    private final Map<String, Long> bodyNanos = new ConcurrentHashMap<>();

    void cap(String saga, int runs) {
        caps.put(saga, Math.max(1, runs));
    }

    /** For a claim owed {@code owed} runs with {@code idle} other workers waiting: its share, at least one. */
    int counted(String saga, int owed, int idle) {
        int share = quick(saga) ? owed : (owed + idle) / (idle + 1);
        return Math.max(1, Math.min(cap(saga), share));
    }

    /**
     * For a claim that searches, with {@code idle} other workers waiting: the cap shared with them (the whole cap for
     * quick bodies), or more when the saga's searching claims took all they asked for lately.
     */
    int searched(String saga, int idle) {
        int share = quick(saga) ? cap(saga) : cap(saga) / (idle + 1);
        return Math.min(cap(saga), Math.max(searching.getOrDefault(saga, 1), share));
    }

    /** A searching claim asked for {@code asked} runs and took {@code took}. */
    void searchedTook(String saga, int asked, int took) {
        int next = took >= asked ? Math.min(cap(saga), asked * 2) : Math.max(1, took);
        if (next == 1) {
            searching.remove(saga);
        } else {
            searching.put(saga, next);
        }
    }

    /** A step body (or compensation, or finally part) of {@code saga} took {@code nanos}; any thread. */
    void bodyTook(String saga, long nanos) {
        long took = Math.max(0, nanos);
        bodyNanos.merge(saga, took, (average, latest) -> average + (latest - average) / 8);
    }

    /** Whether the saga's bodies are quick: known, and under {@link #QUICK_NANOS} on average. */
    boolean quick(String saga) {
        Long average = bodyNanos.get(saga);
        return average != null && average < QUICK_NANOS;
    }

    private int cap(String saga) {
        return caps.getOrDefault(saga, 1);
    }
}
