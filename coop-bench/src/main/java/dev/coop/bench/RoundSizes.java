package dev.coop.bench;

import dev.coop.EngineListener;
import java.util.Map;
import java.util.TreeMap;

/**
 * The distribution of steps per commit: how many transactions advanced several runs at once (rounds, by the number of
 * steps they executed), counted through {@link EngineListener#roundCommitted}. Registered in the counting pass only,
 * so that the timed runs carry no listener.
 */
final class RoundSizes implements EngineListener {
    private final Map<Integer, Long> executed = new TreeMap<>();
    private long claimed;
    private long steps;

    @Override
    public synchronized void roundCommitted(String saga, int claimedRuns, int executedSteps) {
        executed.merge(executedSteps, 1L, Long::sum);
        claimed += claimedRuns;
        steps += executedSteps;
    }

    /**
     * Rounds by steps executed, the steps they executed out of {@code units}, and the runs they claimed but released
     * unexecuted (the round's time was up).
     */
    synchronized Map<String, Object> summary(double units) {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("roundsBySteps", new TreeMap<>(executed));
        m.put("stepsInRounds", steps);
        m.put("shareOfStepsInRounds", Stats.round(steps / units, 3));
        m.put("releasedUnexecuted", claimed - steps);
        return m;
    }
}
