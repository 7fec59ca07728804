package dev.coop.internal;

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
 */
public record Emission(UUID messageId, String topic, String payload, String context, OffsetDateTime due,
        String idempotencyKey, int priority, String orderingKey) {
    /** A message with no context, due at once. */
    public Emission(UUID messageId, String topic, String payload) {
        this(messageId, topic, payload, null, null);
    }

    /** A message without launch keys or priority. */
    public Emission(UUID messageId, String topic, String payload, String context, OffsetDateTime due) {
        this(messageId, topic, payload, context, due, null, 0, null);
    }
}
