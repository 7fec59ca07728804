package dev.coop.internal.store;

import dev.coop.RunStatus;
import java.util.UUID;

/**
 * A parent counted off: whether it became runnable or committed (then count it off at its parent too, in the same
 * hierarchy: {@code rootId}).
 */
public record Counted(UUID id, String saga, RunStatus status, UUID messageId, UUID parentId, UUID rootId) {
}
