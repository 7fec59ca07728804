package dev.coop.internal.step;

import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The {@link Dispatcher}'s book of sagas that may have due runs: which are ready (in round-robin order), each saga's
 * epoch (a new one whenever it is marked ready), and the claims owed for the ready sagas that are counted rather than
 * searched. Not thread-safe: the dispatcher's lock guards every call.
 */
final class ReadySagas {
    private final Map<String, Long> epochs = new HashMap<>();
    private final LinkedHashSet<String> ready = new LinkedHashSet<>();
    /**
     * For a ready saga: how many claims are owed for runs this engine made runnable itself and knows the number of
     * (a launch by its client, a parent woken by its last child, a run given back). A ready saga without an entry
     * is searched: its workers claim until a claim finds nothing (woken by a notification or a probe, which do not
     * say how many runs are due). Counting keeps idle workers from claiming when nothing new is due: such claims
     * find nothing, or take a run whose worker is between its commit and its continuation's reclaim.
     */
    private final Map<String, Integer> owed = new HashMap<>();
    /** Of the claims owed for a saga, how many are retries (handed out first); never more than are owed. */
    private final Map<String, Integer> retries = new HashMap<>();

    ReadySagas(List<String> sagas) {
        sagas.forEach(s -> epochs.put(s, 0L));
    }

    /** The first ready saga that {@code available} accepts, or null. */
    String first(Predicate<String> available) {
        for (String saga : ready) {
            if (available.test(saga)) {
                return saga;
            }
        }
        return null;
    }

    boolean isReady(String saga) {
        return ready.contains(saga);
    }

    /** Whether the saga is ready and searched (no claims counted for it). */
    boolean isSearched(String saga) {
        return ready.contains(saga) && !owed.containsKey(saga);
    }

    /** The saga's epoch now, or null when it is not one of this engine's sagas. */
    Long epoch(String saga) {
        return epochs.get(saga);
    }

    /**
     * Hands out a task for the ready {@code saga}: as many runs as its round size allows, taken from the claims owed
     * for it (a retry first) when it is counted. The saga goes to the end of the round-robin order while it has work
     * left.
     */
    Dispatcher.Task take(String saga, RoundSize rounds, int idle) {
        ready.remove(saga);
        Integer claims = owed.get(saga);
        int runs = claims == null ? rounds.searched(saga, idle) : rounds.counted(saga, claims, idle);
        if (claims == null || claims > runs) {
            ready.addLast(saga); // round robin between sagas
        }
        boolean retry = false;
        if (claims != null) {
            if (claims > runs) {
                owed.put(saga, claims - runs);
            } else {
                owed.remove(saga);
            }
            Integer retrying = retries.get(saga);
            if (retrying != null) {
                retry = true;
                if (retrying > 1) {
                    retries.put(saga, retrying - 1);
                } else {
                    retries.remove(saga);
                }
            }
        }
        return new Dispatcher.Task(saga, epochs.get(saga), claims != null, retry, runs);
    }

    /** Marks the saga ready in a new epoch; false when it is not one of this engine's sagas. */
    boolean markReady(String saga) {
        Long epoch = epochs.get(saga);
        if (epoch == null) {
            return false; // not one of this engine's sagas
        }
        epochs.put(saga, epoch + 1);
        ready.add(saga);
        return true;
    }

    /** Marks the saga ready to be searched (how many runs are due is not known); false when not one of ours. */
    boolean markSearched(String saga) {
        if (!markReady(saga)) {
            return false;
        }
        owed.remove(saga);
        retries.remove(saga);
        return true;
    }

    /** Owes {@code runs} more claims for the saga. */
    void owe(String saga, int runs) {
        owed.merge(saga, runs, Integer::sum);
    }

    /** Of the claims owed for the saga, {@code runs} more are retries. */
    void retry(String saga, int runs) {
        retries.merge(saga, runs, Integer::sum);
    }

    /** A searched claim found nothing: the saga is no longer ready, unless it was woken since {@code epoch}. */
    void forgetUnlessWoken(String saga, long epoch) {
        if (epochs.get(saga) == epoch && !owed.containsKey(saga)) {
            ready.remove(saga);
        }
    }
}
