package dev.coop.internal.store;

import java.util.UUID;

/**
 * A run whose row this transaction locked: the engine may execute its next transaction.
 *
 * @param sagaVersion the version of the saga the run was created with (only that version executes it)
 * @param stepIndex happy path: the index of the step to execute next (the number of steps when only the final
 *        COMMITTED is left)
 * @param nextStep the name of that step when the run last moved (null before its first step and after its last)
 * @param stepsDone how many step instances (steps and child-failure handlers) this run executed so far
 * @param history what the claim read of its executed instances (counts per step, the newest few; on the rollback
 *        path, the instance being rolled back)
 * @param started whether the run's SEEN was written before this claim
 * @param version bumped by every transaction that moved the run; detects concurrent progress
 * @param claimedAt when the claim was made, by the engine's time
 * @param cancellation the failure JSON of a cancellation of this run's scope, or null
 * @param context the run's cooperation context (JSON text), or null when empty
 * @param parentContext when the parent asked this run to roll back: the parent's context at that moment, or null
 * @param finallyDone the indexes of the steps whose finally part ran
 * @param pendingChildren awaited runs caused by the latest instance that have not finished (a barrier timer fired)
 * @param awaited false when the parent stopped waiting for this run (its count-off is skipped)
 * @param waitingSince when the run started waiting for its pending children
 * @param xact the id of the transaction that claimed the run; advancing the run in another one fails (CP002)
 * @param runnableAt when the run became runnable (for the scheduling latency reported to listeners)
 * @param cancelFrom from which position of its lineage (1-based) cancellations reach this run, null for 1: a run
 *        launched by a rollback, and the runs below it, are not reached by the cancellation that rollback answers
 *        (schema version 24)
 * @param orderingKey the run's ordering key, or null: its final advance releases the key's next run (schema version
 *        27, {@link KeyedRuns})
 */
public record ClaimedRun(
        UUID id,
        String saga,
        int sagaVersion,
        UUID messageId,
        UUID[] lineage,
        UUID parentId,
        boolean rollback,
        int stepIndex,
        String nextStep,
        int stepsDone,
        StepHistory history,
        int attempt,
        boolean started,
        int failedChildren,
        Integer rollbackSeq,
        String rollbackStage,
        String rollbackCause,
        String resolution,
        int retries,
        int version,
        String context,
        String parentContext,
        int[] finallyDone,
        int pendingChildren,
        boolean awaited,
        java.time.OffsetDateTime waitingSince,
        String cancellation,
        String topic,
        String payload,
        java.time.OffsetDateTime messageCreatedAt,
        java.time.OffsetDateTime claimedAt,
        String xact,
        java.time.OffsetDateTime runnableAt,
        Integer cancelFrom,
        String orderingKey) {
    /**
     * The root of its hierarchy (the first element of its lineage, column {@code root_id}): every statement that
     * addresses a row of this run's hierarchy names it.
     */
    public UUID rootId() {
        return lineage[0];
    }

    /** The scopes of its lineage whose cancellation reaches this run: from {@link #cancelFrom} on. */
    public UUID[] cancelScope() {
        return cancelFrom == null || cancelFrom <= 1
                ? lineage
                : java.util.Arrays.copyOfRange(lineage, Math.min(cancelFrom, lineage.length) - 1, lineage.length);
    }

    /**
     * What a run launched in this run's scope gets as its {@link #cancelFrom}: its own depth when this run is on its
     * rollback path ({@code forRollback}: the launch is work of the rollback), else this run's.
     */
    public Integer childCancelFrom(boolean forRollback) {
        return forRollback ? Integer.valueOf(lineage.length + 1) : cancelFrom; // boxed: null stays null
    }
}
