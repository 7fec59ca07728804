package dev.coop.internal;

import java.util.UUID;

/**
 * A run whose row this transaction locked: the engine may execute its next step.
 *
 * @param stepIndex the index of the step to execute next; equal to the number of steps when only the final
 *        COMMITTED is left to write
 * @param stepsDone how many steps this run executed so far (the sequence number of the next one)
 * @param started whether the run's SEEN was written before this claim
 */
public record ClaimedRun(
        UUID id,
        String saga,
        UUID messageId,
        UUID[] lineage,
        UUID parentId,
        int stepIndex,
        int stepsDone,
        boolean started,
        int failedChildren,
        int retries,
        String topic,
        String payload) {
}
