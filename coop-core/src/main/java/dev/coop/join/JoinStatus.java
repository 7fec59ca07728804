package dev.coop.join;

/** Where a join stands. Every status but {@link #OPEN} is final and was announced by exactly one message. */
public enum JoinStatus {
    /** Waiting for members to be attached or to finish. */
    OPEN,
    /** Every expected member finished (failures allowed unless the join fails if any failed): on-complete sent. */
    COMPLETED,
    /** Every expected member finished, at least one failed, and the join fails if any failed: on-fail sent. */
    FAILED,
    /** The timeout passed before every expected member finished: on-fail sent. */
    TIMED_OUT;

    public boolean isFinished() {
        return this != OPEN;
    }
}
