package dev.coop.inspect;

import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;

import java.time.OffsetDateTime;
import java.util.UUID;

/**
 * A run in a listing: enough to pick it, then inspect its tree.
 *
 * @param sagaVersion the version of the saga the run was created with (1 unless the saga has versions)
 * @param running the step an engine executes in this run right now (its status is then RUNNABLE), or null; named
 *        as its next step ({@code rollback} on the rollback path: the tree names what it undoes)
 */
public record RunSummary(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
        OffsetDateTime createdAt, OffsetDateTime finishedAt, String failureMessage, int sagaVersion,
        RunningStep running) {

    /** A run no engine executes now. */
    public RunSummary(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
            OffsetDateTime createdAt, OffsetDateTime finishedAt, String failureMessage, int sagaVersion) {
        this(runId, messageId, topic, saga, lineage, status, createdAt, finishedAt, failureMessage, sagaVersion,
                null);
    }

    /** This run, executing {@code step} now. */
    public RunSummary withRunning(RunningStep step) {
        return new RunSummary(runId, messageId, topic, saga, lineage, status, createdAt, finishedAt, failureMessage,
                sagaVersion, step);
    }

    /** A run of version 1 of its saga. */
    public RunSummary(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
            OffsetDateTime createdAt, OffsetDateTime finishedAt, String failureMessage) {
        this(runId, messageId, topic, saga, lineage, status, createdAt, finishedAt, failureMessage, 1);
    }
}
