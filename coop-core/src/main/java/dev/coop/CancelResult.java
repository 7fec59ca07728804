package dev.coop;

/** What a cancellation request did. */
public enum CancelResult {
    /** Recorded: every run in the scope gives up at its next step boundary and rolls back. */
    REQUESTED,
    /** The scope had been cancelled before; nothing changed. */
    ALREADY_REQUESTED,
    /** Everything in the scope had finished (or is rolling back, which cannot be cancelled); nothing changed. */
    ALREADY_FINISHED
}
