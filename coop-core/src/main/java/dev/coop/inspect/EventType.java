package dev.coop.inspect;

/** The types of rows in the event log. See docs/protocol.md for who writes each and when. */
public enum EventType {
    /** A message was launched, on the global scope or from a step. */
    EMITTED,
    /** A run started: the saga saw the message. */
    SEEN,
    /** A step of a run committed. */
    SUSPENDED,
    /** A run finished its last step and every run its steps caused finished too. */
    COMMITTED,
    /** A run started rolling back (a step failed, or a rollback reached it). */
    ROLLING_BACK,
    /** A rolling-back step asks the runs of a message it emitted to roll back. */
    ROLLBACK_EMITTED,
    /** A run finished rolling back. */
    ROLLED_BACK,
    /** A run's rollback failed. */
    ROLLBACK_FAILED,
    /** Someone asked a scope to give up. */
    CANCELLATION_REQUESTED,
    /**
     * An attempt of a step failed and its retry policy runs it again ({@link Event#attempt()}: which one). A step's
     * first attempts are kept whole; one more event holds the latest, rewritten by each later attempt.
     */
    ATTEMPT_FAILED,
    /** A run stopped for an operator: its step's retries ran out under a parking policy, or it cannot go on. */
    PARKED,
    /** An operator let a parked run run its step again, from attempt 1. */
    RETRIED,
    /** An operator marked a parked run's step done without running it. */
    MARKED_DONE
}
