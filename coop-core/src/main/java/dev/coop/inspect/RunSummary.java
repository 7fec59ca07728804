package dev.coop.inspect;

import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;

import java.time.OffsetDateTime;
import java.util.UUID;

/** A run in a listing: enough to pick it, then inspect its tree. */
public record RunSummary(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
        OffsetDateTime createdAt, OffsetDateTime finishedAt, String failureMessage) {
}
