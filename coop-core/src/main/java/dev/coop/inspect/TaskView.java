package dev.coop.inspect;

import dev.coop.MessageId;
import dev.coop.TaskState;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * An external task as the outside world and operators see it ({@link dev.coop.CoopClient#externalTask(String)},
 * {@link dev.coop.CoopClient#openTasks(int)}).
 *
 * @param runId the task's run (its place in the tree)
 * @param message the task's message
 * @param lineage the task run's lineage: the root message id first, its parent run last but one
 * @param name the task's name
 * @param token the token that addresses it (a secret: show it only to whoever may complete the task)
 * @param key its correlation key, if any
 * @param state where it stands
 * @param payload the payload the step gave it, JSON text
 * @param result the result it was completed with (JSON text), once {@link TaskState#COMPLETED}
 * @param failure why it failed, timed out or was cancelled (a failure document's message), if so
 * @param createdAt when the step that opened it started
 * @param deadline when Coop settles it if nobody does (the step's deadline), if any
 * @param settledAt when it left {@link TaskState#OPEN}, if it did
 * @param settledBy who settled it (the actor a completion named, or {@code coop}), if anyone did
 */
public record TaskView(UUID runId, MessageId message, List<UUID> lineage, String name, String token,
        Optional<String> key, TaskState state, String payload, Optional<String> result, Optional<String> failure,
        Instant createdAt, Optional<Instant> deadline, Optional<Instant> settledAt, Optional<String> settledBy) {
    public TaskView {
        lineage = List.copyOf(lineage);
    }

    /** The run whose step opened the task. */
    public UUID parentRunId() {
        return lineage.get(lineage.size() - 2);
    }
}
