package dev.coop.internal.step;

import dev.coop.internal.store.Advance;
import dev.coop.internal.store.Tx;

import dev.coop.RunStatus;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.UUID;

/**
 * Which transaction the stages of a worker's step path work in: alone (it commits itself, and its commit may reclaim
 * the run to continue it) or part of a {@link StepRound} (the round commits it with the others'). Set by
 * {@link StepExecutor} as each transaction starts and ends, and read by the stages that commit, defer to the
 * commit, or undo: this is all the state the step path keeps between its stages; what a stage decides it returns.
 */
final class StepTransaction {
    /** Whether the next commit may also reclaim its run when it stays runnable now. */
    private boolean continuationAllowed;
    /** The round this transaction belongs to (its commit and what follows it wait for the round), or null. */
    private StepRound round;

    /** The transactions from now on are part of {@code round} (null: each commits on its own). */
    void joinRound(StepRound round) {
        this.round = round;
    }

    /** The round of the transaction, or null. */
    StepRound round() {
        return round;
    }

    /** Whether the transaction is part of a round: a failure that needs the whole transaction rolled back aborts it. */
    boolean inRound() {
        return round != null;
    }

    /** Lets the next commit reclaim its run (or not). */
    void allowContinuation(boolean allowed) {
        continuationAllowed = allowed;
    }

    /** Whether the commit of {@code next} may begin the next transaction and reclaim its run in it. */
    boolean mayReclaim(Advance next) {
        return continuationAllowed && round == null && next.status() == RunStatus.RUNNABLE
                && next.runnableAt() == null && next.delayMillis() == 0;
    }

    /** Commits the transaction; in a round, leaves that to the round. */
    void commitNow(Connection c) throws SQLException {
        if (round == null) {
            c.commit();
        }
    }

    /** Runs {@code action} once the transaction committed: now, or when its round did. */
    void afterCommit(Runnable action) {
        if (round == null) {
            action.run();
        } else {
            round.afterCommit(action);
        }
    }

    /**
     * The one place a failed transaction of the step path is undone: alone, it is rolled back now (and its commit may
     * no longer reclaim the run); in a round, the round is aborted ({@link RoundAborted}: {@link ExecuteRound} rolls
     * it back), and {@code settlement}, when given, settles the run that caused it, alone, afterwards.
     *
     * @param culprit the run whose own trouble this is, settled by {@code settlement}; null with it when the runs of an
     *        aborted round are all executed again
     */
    void undo(Connection c, Throwable cause, UUID culprit, RoundAborted.Settlement settlement) {
        if (round != null) {
            throw settlement == null ? new RoundAborted(cause) : new RoundAborted(cause, culprit, alone -> {
                continuationAllowed = false;
                return settlement.settle(alone);
            });
        }
        continuationAllowed = false; // a reclaim the commit would make belongs to no transaction of ours
        Tx.rollbackQuietly(c);
    }
}
