package dev.coop.internal.step;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.UUID;

/**
 * A run's transaction in a round needs the whole transaction rolled back (database trouble its savepoint cannot
 * isolate, a step that ended the transaction, Coop's own failure): the round is rolled back, nothing of it is kept,
 * and its runs are executed again one run per transaction, where the path for one run handles the cause. When the
 * cause is one run's own (its step ended the transaction, Coop could not process it, its writes were refused), that
 * run is settled as it would have been alone, without running its user code again.
 */
final class RoundAborted extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** How the run that caused the abort is settled after the round's rollback, in a transaction of its own. */
    @FunctionalInterface
    interface Settlement {
        /** @return how its transaction ended (a settled run is not continued at once: no reclaim) */
        StepEnd settle(Connection c) throws SQLException;
    }

    /** The run whose own trouble aborted the round, or null when the cause is the round's. */
    private final transient UUID culprit;
    private final transient Settlement settlement;

    RoundAborted(Throwable cause) {
        this(cause, null, null);
    }

    RoundAborted(Throwable cause, UUID culprit, Settlement settlement) {
        super("the round's transaction must be rolled back: " + cause, cause, false, false);
        this.culprit = culprit;
        this.settlement = settlement;
    }

    /** Whether run {@code id} caused the abort: then it is {@link #settle settled}, without running again. */
    boolean causedBy(UUID id) {
        return id.equals(culprit);
    }

    /** Settles the run that caused the abort, after the round was rolled back. */
    StepEnd settle(Connection c) throws SQLException {
        return settlement.settle(c);
    }

    /** Aborts the round when {@code tx} is part of one. */
    static void ifInRound(StepTransaction tx, Throwable cause) {
        if (tx.inRound()) {
            throw new RoundAborted(cause);
        }
    }
}
