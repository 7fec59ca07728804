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
 * @param children the runs caused by its steps, in the order they were created; when the run caused more runs than a
 *        tree lists ({@code collapsed} is not empty), only those that did not commit (up to a cap, oldest first)
 * @param collapsed when the read counted its children instead of listing them all: per saga, how many runs it caused
 *        and how they stand (listed children included); empty when every child is in {@code children}
 * @param sagaVersion the version of the saga the run was created with (1 unless the saga has versions), the only
 *        version that executes it
 * @param waitingFor why a runnable, due run that no engine executes right now is not running: its saga's limits
 *        ({@code "waiting for a slot (3 of 3 busy)"}, {@code "rate limited until <instant>"}); null otherwise
 * @param ordering its priority and ordering key, and the run it is held behind ({@link RunOrdering#NONE}: none)
 * @param running the step an engine executes right now, or null (none, or the read could not tell)
 * @param task for the run of an external task ({@code saga} {@code ~external-task}): its key, state, who settled
 *        it and when; null for other runs
 */
public record RunView(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
        boolean rollingBack, OffsetDateTime createdAt, OffsetDateTime startedAt, OffsetDateTime finishedAt,
        Failure failure, List<StepView> steps, List<RunView> children, List<CollapsedRuns> collapsed,
        int sagaVersion, String waitingFor, RunOrdering ordering, RunningStep running, TaskSummary task) {

    public RunView {
        collapsed = collapsed == null ? List.of() : List.copyOf(collapsed);
        ordering = ordering == null ? RunOrdering.NONE : ordering;
    }

    /** A run that is not an external task's. */
    public RunView(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
            boolean rollingBack, OffsetDateTime createdAt, OffsetDateTime startedAt, OffsetDateTime finishedAt,
            Failure failure, List<StepView> steps, List<RunView> children, List<CollapsedRuns> collapsed,
            int sagaVersion, String waitingFor, RunOrdering ordering, RunningStep running) {
        this(runId, messageId, topic, saga, lineage, status, rollingBack, createdAt, startedAt, finishedAt, failure,
                steps, children, collapsed, sagaVersion, waitingFor, ordering, running, null);
    }

    /** A run that no engine executes right now. */
    public RunView(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
            boolean rollingBack, OffsetDateTime createdAt, OffsetDateTime startedAt, OffsetDateTime finishedAt,
            Failure failure, List<StepView> steps, List<RunView> children, List<CollapsedRuns> collapsed,
            int sagaVersion, String waitingFor, RunOrdering ordering) {
        this(runId, messageId, topic, saga, lineage, status, rollingBack, createdAt, startedAt, finishedAt, failure,
                steps, children, collapsed, sagaVersion, waitingFor, ordering, null);
    }

    /** A run of version 1 of its saga, not held back by its saga's limits, launched without launch options. */
    public RunView(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
            boolean rollingBack, OffsetDateTime createdAt, OffsetDateTime startedAt, OffsetDateTime finishedAt,
            Failure failure, List<StepView> steps, List<RunView> children, List<CollapsedRuns> collapsed) {
        this(runId, messageId, topic, saga, lineage, status, rollingBack, createdAt, startedAt, finishedAt, failure,
                steps, children, collapsed, 1, null, RunOrdering.NONE);
    }

    /** A run of version 1 of its saga, not held back by its saga's limits, with the given launch options. */
    public RunView(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
            boolean rollingBack, OffsetDateTime createdAt, OffsetDateTime startedAt, OffsetDateTime finishedAt,
            Failure failure, List<StepView> steps, List<RunView> children, List<CollapsedRuns> collapsed,
            RunOrdering ordering) {
        this(runId, messageId, topic, saga, lineage, status, rollingBack, createdAt, startedAt, finishedAt, failure,
                steps, children, collapsed, 1, null, ordering);
    }

    /** A run launched without launch options. */
    public RunView(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
            boolean rollingBack, OffsetDateTime createdAt, OffsetDateTime startedAt, OffsetDateTime finishedAt,
            Failure failure, List<StepView> steps, List<RunView> children, List<CollapsedRuns> collapsed,
            int sagaVersion, String waitingFor) {
        this(runId, messageId, topic, saga, lineage, status, rollingBack, createdAt, startedAt, finishedAt, failure,
                steps, children, collapsed, sagaVersion, waitingFor, RunOrdering.NONE);
    }

    /** A run of version 1 of its saga whose children are all listed. */
    public RunView(UUID runId, MessageId messageId, String topic, String saga, Lineage lineage, RunStatus status,
            boolean rollingBack, OffsetDateTime createdAt, OffsetDateTime startedAt, OffsetDateTime finishedAt,
            Failure failure, List<StepView> steps, List<RunView> children) {
        this(runId, messageId, topic, saga, lineage, status, rollingBack, createdAt, startedAt, finishedAt, failure,
                steps, children, List.of());
    }

    /** How many runs its steps caused: the listed children, or the collapsed counts when the read counted them. */
    public long childCount() {
        return collapsed.isEmpty() ? children.size() : collapsed.stream().mapToLong(CollapsedRuns::total).sum();
    }

    /** This run and every listed run below it, depth first (collapsed runs are only counted: see {@link #collapsed}). */
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
