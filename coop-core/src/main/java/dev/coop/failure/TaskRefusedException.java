package dev.coop.failure;

import dev.coop.TaskState;

/**
 * A completion or failure of an external task was refused: the task was settled otherwise before (completed with
 * another result, failed, timed out, cancelled, compensated). The message names the first settlement.
 */
public final class TaskRefusedException extends CoopException {
    private static final long serialVersionUID = 1L;
    private final TaskState state;

    public TaskRefusedException(String message, TaskState state) {
        super(message);
        this.state = state;
    }

    /** How the task was settled. */
    public TaskState state() {
        return state;
    }
}
