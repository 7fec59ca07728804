package dev.coop.inspect;

import dev.coop.Lineage;
import dev.coop.MessageId;
import java.time.OffsetDateTime;

/**
 * An operator's action on a hierarchy, as recorded by the tool that took it (the dashboard records one for every
 * cancel, roll back, retry and mark-done): who, when, why, and what came of it.
 *
 * @param messageId the root message of the hierarchy acted on
 * @param scope the run acted on, or null when the action named the whole message
 * @param action what was asked, e.g. {@code cancel}
 * @param actor who asked (a user name)
 * @param reason why, as the operator wrote it
 * @param outcome what came of it, e.g. {@code REQUESTED} or the error that refused it
 * @param createdAt when it was recorded (database clock)
 */
public record AuditEntry(long id, MessageId messageId, Lineage scope, String action, String actor, String reason,
        String outcome, OffsetDateTime createdAt) {
}
