package dev.coop.inspect;

import dev.coop.Lineage;
import dev.coop.MessageId;

import java.time.OffsetDateTime;

/**
 * One row of the event log.
 *
 * @param saga null for events written outside a saga (a global launch)
 * @param engine the engine instance that wrote it, or null
 * @param step the name of the transaction: a step's own name, or, for the transactions that are not plain steps, the
 *        step's name marked as docs/protocol.md ("Step names in the log") describes: {@code "<step> (child failure
 *        handler)"}, {@code "<step> (finally)"}, {@code "Rollback of <x>"}, {@code "Rollback of <x> (rolling back
 *        child scopes)"}; null when no step was involved. {@link #sagaStep()} reads the step's own name back
 * @param startedAt for events written at the end of a step (SUSPENDED, COMMITTED, ...): when that transaction
 *        started its work; null otherwise
 * @param exception the failure as JSON (see docs/protocol.md), or null
 * @param context the cooperation context as JSON, or null when empty
 * @param attempt for {@code ATTEMPT_FAILED} and {@code PARKED}: which attempt of the step it is about; null otherwise
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
        String context,
        Integer attempt) {
    private static final String ROLLBACK_PREFIX = "Rollback of ";

    /** An event that is about no particular attempt of a step. */
    public Event(long id, MessageId messageId, EventType type, String saga, String engine, String step,
            Lineage lineage, OffsetDateTime createdAt, OffsetDateTime startedAt, String exception, String context) {
        this(id, messageId, type, saga, engine, step, lineage, createdAt, startedAt, exception, context, null);
    }
    private static final String[] SUFFIXES = {" (rolling back child scopes)", " (child failure handler)", " (finally)"};

    /**
     * The name of the saga's step this event belongs to, without the marks of rollback sub-steps, child-failure
     * handler runs and finally parts ({@code "Rollback of charge (child failure handler) (rolling back child
     * scopes)"} → {@code "charge"}); null when {@link #step()} is null. Saga step names cannot imitate the marks, so
     * this is exact.
     */
    public String sagaStep() {
        if (step == null) {
            return null;
        }
        String name = step.startsWith(ROLLBACK_PREFIX) ? step.substring(ROLLBACK_PREFIX.length()) : step;
        for (String suffix : SUFFIXES) {
            if (name.endsWith(suffix)) {
                name = name.substring(0, name.length() - suffix.length());
            }
        }
        return name;
    }
}
