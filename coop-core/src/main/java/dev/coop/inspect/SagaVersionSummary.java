package dev.coop.inspect;

import java.time.OffsetDateTime;
import java.util.List;

/**
 * One version of a saga as the registry and the runs see it: for a rolling deploy, which versions are registered,
 * which one new runs get, how many runs of each are unfinished, and which running engines have it.
 *
 * @param topic the topic the saga handles; null when the saga is not registered any more
 * @param registered whether the version is registered (runs of a retired version may still be unfinished)
 * @param current whether new runs get this version (the highest registered)
 * @param unfinishedRuns runs of this version that are runnable, waiting, sleeping, parked or rolling back
 * @param runningEngines the engines that have this version and did not stop (a crashed engine is listed until it
 *        is replaced: nothing tells Coop it died)
 * @param lastEngine the engine that registered the version last, or null
 * @param lastSeenAt when it did, or null
 */
public record SagaVersionSummary(String saga, int version, String topic, boolean registered, boolean current,
        long unfinishedRuns, List<String> runningEngines, String lastEngine, OffsetDateTime lastSeenAt) {

    public SagaVersionSummary {
        runningEngines = List.copyOf(runningEngines);
    }

    /** Whether runs of this version wait for an engine that has it, and no running engine has it. */
    public boolean stranded() {
        return unfinishedRuns > 0 && runningEngines.isEmpty();
    }
}
