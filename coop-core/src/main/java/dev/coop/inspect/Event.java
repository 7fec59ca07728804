package dev.coop.inspect;

import dev.coop.Lineage;
import dev.coop.MessageId;

import java.time.OffsetDateTime;

/**
 * One row of the event log.
 *
 * @param saga null for events written outside a saga (a global launch)
 * @param engine the engine instance that wrote it, or null
 * @param step the step name, or null when no step was involved
 * @param startedAt for events written at the end of a step (SUSPENDED, COMMITTED, ...): when that transaction
 *        started its work; null otherwise
 * @param exception the failure as JSON (see docs/protocol.md), or null
 * @param context the cooperation context as JSON, or null when empty
 */
public record Event(
        long id,
        MessageId messageId,
        EventType type,
        String saga,
        String engine,
        String step,
        Lineage lineage,
        OffsetDateTime createdAt,
        OffsetDateTime startedAt,
        String exception,
        String context) {
}
