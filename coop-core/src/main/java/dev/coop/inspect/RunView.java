package dev.coop.inspect;

import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;

import dev.coop.failure.Failure;

import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/**
 * One run in a cooperation tree: what it handled, how it stands, its steps in order, and the runs its steps caused.
 *
 * @param rollingBack whether it is on (or went down) the rollback path
 * @param failure why it rolled back, failed to, or is parked; null otherwise
 * @param children the runs caused by its steps, in the order they were created
 */
public record RunView(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
        boolean rollingBack, OffsetDateTime createdAt, OffsetDateTime startedAt, OffsetDateTime finishedAt,
        Failure failure, List<StepView> steps, List<RunView> children) {

    /** This run and every run below it, depth first. */
    public List<RunView> flatten() {
        List<RunView> all = new java.util.ArrayList<>();
        java.util.ArrayDeque<RunView> stack = new java.util.ArrayDeque<>();
        stack.push(this);
        while (!stack.isEmpty()) { // no recursion: hierarchies may be thousands of levels deep
            RunView r = stack.pop();
            all.add(r);
            for (int i = r.children().size() - 1; i >= 0; i--) {
                stack.push(r.children().get(i));
            }
        }
        return all;
    }
}
