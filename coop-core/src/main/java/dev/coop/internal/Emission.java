package dev.coop.internal;

import java.time.OffsetDateTime;
import java.util.UUID;

/**
 * A message launched by a step or a client, waiting to be written with the transaction that launched it.
 *
 * @param context the cooperation context its runs start with (JSON text), or null for none
 * @param due when its runs may start (a delayed launch), or null for at once
 */
public record Emission(UUID messageId, String topic, String payload, String context, OffsetDateTime due) {
    /** A message with no context, due at once. */
    public Emission(UUID messageId, String topic, String payload) {
        this(messageId, topic, payload, null, null);
    }
}
