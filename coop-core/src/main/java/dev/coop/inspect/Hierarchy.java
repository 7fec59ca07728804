package dev.coop.inspect;

import dev.coop.MessageId;

import java.time.OffsetDateTime;
import java.util.List;

/**
 * The cooperation tree below one message: the message, and the runs that handled it with everything they caused.
 *
 * @param runs one per saga that handled the message (empty when none was registered)
 */
public record Hierarchy(MessageId messageId, String topic, OffsetDateTime launchedAt, List<RunView> runs) {
    /** How the message's runs ended, or null while any run of the tree is still going. */
    public Outcome outcome() {
        return finished() ? Outcome.of(runs.stream().map(RunView::status).toList()) : null;
    }

    /** Whether every run in the tree finished, counted ones included. */
    public boolean finished() {
        return runs.stream().flatMap(r -> r.flatten().stream()).allMatch(r -> r.status().isFinished()
                && r.collapsed().stream().allMatch(CollapsedRuns::finished));
    }
}
