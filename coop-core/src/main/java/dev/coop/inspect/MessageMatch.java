package dev.coop.inspect;

import dev.coop.MessageId;
import java.time.OffsetDateTime;

/**
 * A message found by a search ({@code CoopClient.search}): which one, and by what it matched.
 *
 * @param matchedBy what matched: {@code "message id"}, {@code "idempotency key"}
 */
public record MessageMatch(MessageId messageId, String topic, OffsetDateTime launchedAt, String matchedBy) {
}
