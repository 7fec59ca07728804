package dev.coop;

import java.time.OffsetDateTime;
import java.util.List;

/**
 * The cooperation tree below one message: the message, and the runs that handled it with everything they caused.
 *
 * @param runs one per saga that handled the message (empty when none was registered)
 */
public record Hierarchy(MessageId messageId, String topic, OffsetDateTime launchedAt, List<RunView> runs) {
    /** Whether every run in the tree finished. */
    public boolean finished() {
        return runs.stream().flatMap(r -> r.flatten().stream()).allMatch(r -> r.status().isFinished());
    }
}
