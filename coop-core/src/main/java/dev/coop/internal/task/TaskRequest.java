package dev.coop.internal.task;

import java.util.UUID;

/**
 * An external task a step opened, waiting to be written with the step's transaction.
 *
 * @param compensationTopic the topic launched if the scope rolls back after the task completed, or null
 * @param compensationPayload its payload (JSON text), or null
 * @param signal whether a signal kept for its key completes it at once (a step waiting for a signal)
 * @param timeoutAt when Coop times it out by its own timeout, or null
 */
public record TaskRequest(UUID runId, UUID messageId, String name, String payload, String token, String key,
        String compensationTopic, String compensationPayload, boolean signal, java.time.OffsetDateTime timeoutAt) {
}
