package dev.coop.inspect;

import dev.coop.TaskState;
import java.time.Duration;
import java.time.OffsetDateTime;

/**
 * An external task's story in a tree ({@link RunView#task()}): what it was, how it stands, who settled it and how
 * long it waited. No token: a tree is read by viewers, a token completes the task.
 *
 * @param name the task's name
 * @param key its correlation key, or null
 * @param state where it stands
 * @param settledBy who settled it (the actor a completion or failure named, {@code signal} for a kept signal,
 *        {@code coop} for a timeout or a cancellation), or null while it is open
 * @param openedAt when the step that opened it started
 * @param settledAt when it left {@link TaskState#OPEN}, or null
 */
public record TaskSummary(String name, String key, TaskState state, String settledBy, OffsetDateTime openedAt,
        OffsetDateTime settledAt) {

    /** How long it waited for the outside world: until it was settled, or until {@code now} while it is open. */
    public Duration waited(OffsetDateTime now) {
        OffsetDateTime end = settledAt != null ? settledAt : now;
        return openedAt == null || end == null || end.isBefore(openedAt)
                ? Duration.ZERO
                : Duration.between(openedAt, end);
    }
}
