package dev.coop.inspect;

import dev.coop.Lineage;
import dev.coop.MessageId;

import dev.coop.failure.Failure;

import java.time.OffsetDateTime;
import java.util.UUID;

/**
 * A run stopped for an operator: its step's retries were exhausted under a parking policy, or its saga no longer
 * has the step it is at. Resolve it with {@link dev.coop.CoopClient#retryNow}, {@link dev.coop.CoopClient#markStepDone}
 * or {@link dev.coop.CoopClient#cancel(Lineage, String)}.
 *
 * @param stepIndex the index of the step it stopped at
 * @param attempt the attempt that failed last
 * @param failure why it stopped
 * @param step the name of the step it stopped at, or null when the run row does not say
 */
public record ParkedRun(UUID runId, MessageId messageId, String saga, Lineage lineage, int stepIndex, int attempt,
        Failure failure, OffsetDateTime createdAt, String step) {

    /** A parked run whose step is known by its index only. */
    public ParkedRun(UUID runId, MessageId messageId, String saga, Lineage lineage, int stepIndex, int attempt,
            Failure failure, OffsetDateTime createdAt) {
        this(runId, messageId, saga, lineage, stepIndex, attempt, failure, createdAt, null);
    }
}
