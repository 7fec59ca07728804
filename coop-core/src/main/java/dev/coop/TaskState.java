package dev.coop;

/** Where an external task stands; every state but {@link #OPEN} is final. */
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
    /** It had completed, then its scope rolled back: its compensation message (if it declared one) was launched. */
    COMPENSATED
}
