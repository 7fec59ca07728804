package dev.coop;

/**
 * What a completion or failure of an external task did. A conflicting one (another outcome, another result, or a task
 * Coop settled) is refused with a {@link dev.coop.failure.TaskRefusedException} instead.
 */
public enum TaskOutcome {
    /** This call settled the task; its run's parent was counted off (and woken when it waited for nothing else). */
    SETTLED,
    /** The task was already settled with the same outcome (and result): nothing happened. */
    ALREADY_SETTLED
}
