package dev.coop.internal.step;

import java.util.HashMap;
import java.util.Map;

/**
 * How many runs of a saga a claim takes at once (a round: one step of each, one commit), following the backlog so
 * that a run due alone goes alone, at once. A claim owed for a known number of runs shares them with the idle
 * workers (each takes its part, so that bodies run in parallel first and share commits only beyond that); a claim
 * that searches (a notification or probe said runs are due, not how many) takes its share of the cap, and doubles
 * while its claims take all they asked for. Never more than the saga's cap. Guarded by the dispatcher's lock.
 */
final class RoundSize {
    private final Map<String, Integer> caps = new HashMap<>();
    private final Map<String, Integer> searching = new HashMap<>();

    void cap(String saga, int runs) {
        caps.put(saga, Math.max(1, runs));
    }

    /** For a claim owed {@code owed} runs with {@code idle} other workers waiting: its share, at least one. */
    int counted(String saga, int owed, int idle) {
        int share = (owed + idle) / (idle + 1);
        return Math.max(1, Math.min(cap(saga), share));
    }

    /**
     * For a claim that searches, with {@code idle} other workers waiting: the cap shared with them, or more when the
     * saga's searching claims took all they asked for lately.
     */
    int searched(String saga, int idle) {
        return Math.min(cap(saga), Math.max(searching.getOrDefault(saga, 1), cap(saga) / (idle + 1)));
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

    private int cap(String saga) {
        return caps.getOrDefault(saga, 1);
    }
}
