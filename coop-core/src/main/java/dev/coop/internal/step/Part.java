package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.Saga;

/**
 * A part of a claimed run that runs user code (a step, a finally part, a child-failure handler), as the stages after
 * its body see it: the run as claimed, its saga, the step's definition (null for a child-failure handler) and the
 * part's name in the log.
 */
record Part(ClaimedRun run, Saga<?> saga, Saga.Step<?> definition, String name) {
}
