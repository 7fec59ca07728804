package dev.coop;

/** Where an external task stands; every state but {@link #OPEN} and {@link #COMPENSATING} is final. */
public enum TaskState {
    /** Waiting for the outside world to complete or fail it. */
    OPEN,
    /** Completed with a result ({@link CoopClient#complete(String, Object)}). */
    COMPLETED,
    /** Failed by the outside world ({@link CoopClient#fail(String, String)}): a child failure of the step. */
    FAILED,
    /** Settled by Coop: its own deadline or the step's deadline passed before anyone completed it. */
    TIMED_OUT,
    /** Settled by Coop: its scope was cancelled (or gave up otherwise) before anyone completed it. */
    CANCELLED,
    /**
     * It had completed, then its scope rolled back: the compensation it declared was launched and its runs are under
     * way. It becomes {@link #COMPENSATED} or {@link #COMPENSATION_FAILED} when they finished.
     */
    COMPENSATING,
    /**
     * It had completed, then its scope rolled back: every run of the compensation it declared committed (or it
     * declared none, or nothing handles its topic).
     */
    COMPENSATED,
    /**
     * It had completed, then its scope rolled back, and a run of its compensation did not commit (it failed, or its
     * own scope was cancelled): the rollback that launched it ends {@code ROLLBACK_FAILED}, for an operator.
     */
    COMPENSATION_FAILED
}
