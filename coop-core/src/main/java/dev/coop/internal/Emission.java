package dev.coop.internal;

import java.util.UUID;

/** A message launched by a step or a client, waiting to be written with the transaction that launched it. */
public record Emission(UUID messageId, String topic, String payload) {
}
