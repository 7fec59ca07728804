package dev.coop;

import java.time.Instant;

/**
 * A run waiting for the runs its latest step (or rollback stage) caused, as a {@link CooperationStrategy} sees it.
 *
 * @param since when the run started waiting (its step committed), by the engine's time
 * @param pending how many awaited children have not finished
 * @param notStarted of those, how many have not started yet
 */
public record Barrier(RunFacts run, boolean rollbackPath, Instant since, int pending, int notStarted) {
}
