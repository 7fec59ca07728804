package dev.coop;

/** What {@link CoopClient#signal(String, Object, java.time.Duration)} did with a signal. */
public enum SignalOutcome {
    /** A step was waiting for the key: its task is completed with the signal, and its run goes on. */
    DELIVERED,
    /** Nobody waits for the key yet: the signal is kept until a step waits for it, or until it expires. */
    KEPT
}
