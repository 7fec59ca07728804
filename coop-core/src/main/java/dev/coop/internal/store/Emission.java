package dev.coop.internal.store;

import java.time.OffsetDateTime;
import java.util.UUID;

/**
 * A message launched by a step or a client, waiting to be written with the transaction that launched it.
 *
 * @param context the cooperation context its runs start with (JSON text), or null for none
 * @param due when its runs may start (a delayed launch), or null for at once
 * @param idempotencyKey the key no other message of the topic may hold (else nothing is written), or null
 * @param priority the priority of its runs (0: the default)
 * @param orderingKey the key its runs are serialised by, per saga, or null
 * @param businessKey the business key the message is found by, or null
 * @param tags the tags the message is found by (empty: none)
 */
public record Emission(UUID messageId, String topic, String payload, String context, OffsetDateTime due,
        String idempotencyKey, int priority, String orderingKey, String businessKey, java.util.List<String> tags) {
    /** A message without a business key or tags. */
    public Emission(UUID messageId, String topic, String payload, String context, OffsetDateTime due,
            String idempotencyKey, int priority, String orderingKey) {
        this(messageId, topic, payload, context, due, idempotencyKey, priority, orderingKey, null, java.util.List.of());
    }

    /** Whether the message carries a business key or tags (written by a statement of their own). */
    boolean labelled() {
        return businessKey != null || !tags.isEmpty();
    }

    /** A message with no context, due at once. */
    public Emission(UUID messageId, String topic, String payload) {
        this(messageId, topic, payload, null, null);
    }

    /** A message without launch keys or priority. */
    public Emission(UUID messageId, String topic, String payload, String context, OffsetDateTime due) {
        this(messageId, topic, payload, context, due, null, 0, null);
    }
}
