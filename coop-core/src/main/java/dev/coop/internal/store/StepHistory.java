package dev.coop.internal.store;

import java.util.Arrays;

/**
 * What a claim reads of the step instances a run executed, constant in size however long a step looped: how many
 * times each step ran, the newest few instances, and on the rollback path the instance being rolled back. The full
 * list is the step log (the SUSPENDED events that carry a {@code step_seq}), read by index when more is needed.
 *
 * @param iterations per step index: how many of its instances ran (steps never run may be absent at the end)
 * @param recent the newest instances, newest first: {@code recent[i]} is instance {@code stepsDone - 1 - i}
 *        (a step index, or {@code -1 - index} for a child-failure handler run)
 * @param rollbackInstance on the rollback path, the instance at {@code rollback_seq}; else null
 * @param rollbackIteration which execution of its step that instance was; null with it
 */
public record StepHistory(int[] iterations, int[] recent, Integer rollbackInstance, Integer rollbackIteration) {
    /** How many newest instances a claim reads. */
    static final int RECENT = 8;

    /** How many times step {@code index} ran. */
    public int executions(int index) {
        return index < iterations.length ? iterations[index] : 0;
    }

    /** The counts after one more instance: step instances count for their step, handler runs for none. */
    public int[] afterInstance(int instance) {
        if (instance < 0) {
            return iterations;
        }
        int[] next = Arrays.copyOf(iterations, Math.max(iterations.length, instance + 1));
        next[instance]++;
        return next;
    }

    /** The highest step index any instance ran, or -1. */
    public int highestStep() {
        return iterations.length - 1;
    }
}
