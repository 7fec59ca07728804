package dev.coop.internal.store;

import java.time.OffsetDateTime;

/**
 * A parent that a round's count-off counted its children off at, as the count-off left it, and the start of the
 * COMMITTED it wrote when the parent committed (the claim time of its last child counted): what its own count-off at
 * its parent carries on.
 */
public record CountedOff(Counted parent, OffsetDateTime startedAt) {
}
