package dev.coop.internal.step;

/**
 * A run's transaction in a round needs the whole transaction rolled back (database trouble its savepoint cannot
 * isolate, a step that ended the transaction, Coop's own failure): the round is rolled back, nothing of it is kept,
 * and its runs are executed again one run per transaction, where the path for one run handles the cause.
 */
final class RoundAborted extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The run whose step ended the transaction (it fails without running again), or null. */
    private final transient java.util.UUID endedBy;

    RoundAborted(Throwable cause) {
        this(cause, null);
    }

    RoundAborted(Throwable cause, java.util.UUID endedBy) {
        super("the round's transaction must be rolled back: " + cause, cause, false, false);
        this.endedBy = endedBy;
    }

    /** Whether the step of run {@code id} ended the transaction: then it fails, without running again. */
    boolean endedBy(java.util.UUID id) {
        return id.equals(endedBy);
    }

    /** Aborts the round when the transaction of {@code transitions} is part of one. */
    static void ifInRound(Transitions transitions, Throwable cause) {
        if (transitions.inRound()) {
            throw new RoundAborted(cause);
        }
    }
}
