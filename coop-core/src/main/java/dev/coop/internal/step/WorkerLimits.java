package dev.coop.internal.step;

import java.util.HashMap;
import java.util.Map;

/**
 * The sagas with a worker limit of their own in this engine, and how many workers work on each now. Not thread-safe:
 * the {@link Dispatcher}'s lock guards every call.
 */
final class WorkerLimits {
    private final Map<String, Integer> limits = new HashMap<>();
    private final Map<String, Integer> busy = new HashMap<>();

    /** At most {@code workers} workers on {@code saga} at once. */
    void limit(String saga, int workers) {
        limits.put(saga, workers);
    }

    /** Whether the saga has a worker left under its own limit. */
    boolean available(String saga) {
        Integer limit = limits.get(saga);
        return limit == null || busy.getOrDefault(saga, 0) < limit;
    }

    /** A worker starts on the saga. */
    void started(String saga) {
        if (limits.containsKey(saga)) {
            busy.merge(saga, 1, Integer::sum);
        }
    }

    /** A worker is done with the saga; whether that freed a worker under its limit. */
    boolean ended(String saga) {
        return limits.containsKey(saga) && busy.merge(saga, -1, Integer::sum) >= 0;
    }
}
