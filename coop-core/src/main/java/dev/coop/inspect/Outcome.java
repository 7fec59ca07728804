package dev.coop.inspect;

import dev.coop.RunStatus;

import java.util.List;

/** How a message's runs (and so their whole hierarchies) ended. */
public enum Outcome {
    /** Every run of the message committed. */
    COMMITTED,
    /** At least one run rolled back, and none failed to. */
    ROLLED_BACK,
    /** At least one run's rollback failed. */
    ROLLBACK_FAILED,
    /** No saga was registered for the message's topic when it was launched, so nothing ran. */
    UNHANDLED;

    /** The outcome of runs with these statuses (all finished). */
    public static Outcome of(List<RunStatus> statuses) {
        if (statuses.isEmpty()) {
            return UNHANDLED;
        }
        if (statuses.contains(RunStatus.ROLLBACK_FAILED)) {
            return ROLLBACK_FAILED;
        }
        return statuses.contains(RunStatus.ROLLED_BACK) ? ROLLED_BACK : COMMITTED;
    }
}
