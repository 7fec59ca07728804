package dev.coop.inspect;

import java.util.UUID;

/**
 * How a run takes its turn (see {@link dev.coop.LaunchOptions}): the priority and the ordering key its message was
 * launched with, and, while it is {@link dev.coop.RunStatus#HELD}, the run of its key it waits for.
 *
 * @param priority higher is claimed first among the runnable runs of a saga; 0 unless the launch set one
 * @param orderingKey the runs of its saga with this key run one at a time, in launch order; null when none
 * @param heldBehind while the run is held: the unfinished run of the same saga and key that runs now (it runs once
 *        that run and the held runs launched before it finished); null otherwise
 */
public record RunOrdering(int priority, String orderingKey, UUID heldBehind) {
    /** No priority, no ordering key. */
    public static final RunOrdering NONE = new RunOrdering(0, null, null);

    /** Whether the launch set neither a priority nor an ordering key. */
    public boolean isNone() {
        return priority == 0 && orderingKey == null;
    }
}
