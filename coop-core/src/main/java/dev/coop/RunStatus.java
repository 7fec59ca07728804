package dev.coop;

/** Where a run stands, as kept in the run table. */
public enum RunStatus {
    /** Ready for its next step (or its first), possibly not before a due time. */
    RUNNABLE,
    /** Waiting for the runs of the messages its latest step emitted. */
    WAITING,
    /** Stopped for an operator: retries exhausted, or its saga no longer has the step it is at. */
    PARKED,
    /**
     * Not started: an earlier run of its saga with the same ordering key has not finished (see
     * {@link LaunchOptions#orderingKey(String)}). It becomes {@link #RUNNABLE} when its turn comes.
     */
    HELD,
    /** Finished: every step and every child committed. */
    COMMITTED,
    /** Finished: it rolled back. */
    ROLLED_BACK,
    /** Finished: its rollback failed. */
    ROLLBACK_FAILED;

    public boolean isFinished() {
        return this != RUNNABLE && this != WAITING && this != PARKED && this != HELD;
    }
}
