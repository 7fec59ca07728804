package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Advance;
import dev.coop.internal.join.JoinBook;
import dev.coop.internal.store.LogEntry;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Counted;

import dev.coop.RunStatus;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * The commit of a run's transaction, the last stage of every path through a step: appends its events, moves the run,
 * counts it off at its parent when it finished, settles the join memberships of what finished, commits (or leaves
 * that to the round), and wakes whoever the commit made runnable. Each commit returns how it ended ({@link StepEnd}).
 */
final class Commits {
    private final EngineContext engine;
    private final StepTransaction tx;
    private final JoinBook joins;

    Commits(EngineContext engine, StepTransaction tx) {
        this.engine = engine;
        this.tx = tx;
        this.joins = new JoinBook(engine.store(), engine.json());
    }

    /**
     * Appends the events, moves the run, counts it off at its parent when it finished (a parent whose last step
     * already ran commits here too, and so on up), settles the join memberships of the messages that finished,
     * commits, then wakes whoever the commit made runnable.
     */
    StepEnd commit(Connection c, ClaimedRun run, List<LogEntry> entries, Advance next, Collection<String> woken)
            throws SQLException {
        if (!next.status().isFinished()) {
            return commitUnfinished(c, run, entries, next, woken);
        }
        if (tx.inRound() && tx.round().mayDefer(run, next)) { // the round writes it, counts it off, checks memberships
            return deferFinished(run, entries, next, woken);
        }
        if (run.parentId() == null || !run.awaited()) { // no parent to count off: the COMMIT goes with the advance
            return commitFinishedAlone(c, run, entries, next, woken);
        }
        Counted parent = engine.store().advance(c, run, engine.engineId(), entries, next);
        List<java.util.UUID> committedAbove = new ArrayList<>();
        List<String> committedAboveSagas = new ArrayList<>();
        while (parent != null && parent.status() == RunStatus.COMMITTED) {
            committedAbove.add(parent.messageId());
            committedAboveSagas.add(parent.saga());
            parent = parent.parentId() == null
                    ? null
                    : engine.store().countOff(c, parent, RunStatus.COMMITTED,
                            engine.engineId(),
                            run.claimedAt());
        }
        java.util.Set<String> joined = commitUnlessJoined(c, run, committedAbove);
        Counted last = parent;
        tx.afterCommit(() -> {
            woken.forEach(engine.dispatcher()::wake);
            joined.forEach(engine.dispatcher()::wake);
            engine.completions().finished(run.messageId(), run.saga(), next.status());
            for (int k = 0; k < committedAbove.size(); k++) {
                engine.completions().finished(committedAbove.get(k), committedAboveSagas.get(k),
                        RunStatus.COMMITTED);
            }
            if (last != null && last.status() == RunStatus.RUNNABLE) {
                engine.dispatcher().wake(last.saga(), 1); // exactly one run: its claim is owed
            }
        });
        return StepEnd.committed(next.status());
    }

    /**
     * The check that no message of the runs this transaction finished ({@code run}'s, and those of the parents its
     * count-off committed) is a pending join member, and the COMMIT, in one round trip; when a membership is pending
     * (or in a round, which commits later), the memberships are looked up and settled first.
     *
     * @return the sagas to wake once the transaction committed
     */
    private java.util.Set<String> commitUnlessJoined(Connection c, ClaimedRun run, List<java.util.UUID> committedAbove)
            throws SQLException {
        List<java.util.UUID> finished = new ArrayList<>(1 + committedAbove.size());
        finished.add(run.messageId());
        finished.addAll(committedAbove);
        if (!tx.inRound() && engine.store().commitUnlessJoined(c, finished)) {
            return java.util.Set.of();
        }
        java.util.Set<String> joined = joins.runsFinished(c, run.messageId(), committedAbove); // and theirs
        tx.commitNow(c);
        return joined;
    }

    /**
     * The last transaction of a run with no parent to count off: its advance, the check that its message is no pending
     * join member, and the COMMIT, in one round trip. When a membership is pending the check stops the COMMIT; the
     * memberships are then settled and committed as in {@link #commit}.
     */
    private StepEnd commitFinishedAlone(Connection c, ClaimedRun run, List<LogEntry> entries, Advance next,
            Collection<String> woken) throws SQLException {
        java.util.Set<String> joined = java.util.Set.of();
        if (tx.inRound()) { // the round commits: the advance, then the memberships settled if any are pending
            engine.store().advance(c, run, engine.engineId(), entries, next);
            joined = joins.runsFinished(c, run.messageId(), List.of());
        } else if (!engine.store().advanceFinishedAndCommit(c, run, engine.engineId(), entries, next)) {
            joined = joins.runsFinished(c, run.messageId(), List.of());
            c.commit();
        }
        java.util.Set<String> settled = joined;
        tx.afterCommit(() -> {
            woken.forEach(engine.dispatcher()::wake);
            settled.forEach(engine.dispatcher()::wake);
            engine.completions().finished(run.messageId(), run.saga(), next.status());
        });
        return StepEnd.committed(next.status());
    }

    /**
     * The last transaction of a run in a round, written by the round with the others' (see {@link StepRound}): its
     * advance, its count-off at its parent when it has one, the check of the join memberships, the commit.
     */
    private StepEnd deferFinished(ClaimedRun run, List<LogEntry> entries, Advance next, Collection<String> woken) {
        tx.round().defer(new Store.Move(run, entries, next));
        tx.afterCommit(() -> {
            woken.forEach(engine.dispatcher()::wake);
            engine.completions().finished(run.messageId(), run.saga(), next.status());
        });
        return StepEnd.committed(next.status());
    }

    /**
     * Settles the join memberships of messages whose runs this transaction finished besides the claimed run (runs
     * that never started, settled by their parent's give-up).
     *
     * @return the sagas to wake once the transaction committed
     */
    java.util.Set<String> othersFinished(Connection c, List<java.util.UUID> messages) throws SQLException {
        if (messages.isEmpty()) {
            return java.util.Set.of();
        }
        return joins.runsFinished(c, messages.getFirst(), messages.subList(1, messages.size()));
    }

    StepEnd commit(Connection c, ClaimedRun run, List<LogEntry> entries, Advance next) throws SQLException {
        return commit(c, run, entries, next, List.of());
    }

    /**
     * A run that did not finish has nothing to count off or settle: its advance and the COMMIT go in one round trip.
     * When it stays runnable now and the worker may continue it, the same round trip begins the next transaction
     * and reclaims the run ({@link StepEnd#reclaimed}); the caller must then return that end at once, leaving that
     * transaction to the worker.
     */
    private StepEnd commitUnfinished(Connection c, ClaimedRun run, List<LogEntry> entries, Advance next,
            Collection<String> woken) throws SQLException {
        if (tx.inRound()) { // the round commits; a run advances one step per transaction, so no continuation
            if (tx.round().mayDefer(run, next)) {
                tx.round().defer(new Store.Move(run, entries, next)); // sent with others' (see StepRound)
            } else {
                engine.store().advance(c, run, engine.engineId(), entries, next);
            }
            tx.afterCommit(() -> woken.forEach(engine.dispatcher()::wake));
            return StepEnd.committed(next.status());
        }
        boolean reclaim = tx.mayReclaim(next);
        ClaimedRun continuation;
        try {
            continuation = engine.store().advanceAndCommit(c, run, engine.engineId(), entries, next, reclaim);
        } finally {
            woken.forEach(engine.dispatcher()::wake); // also when the commit's fate is unknown: a spare wake is free
        }
        return reclaim ? StepEnd.reclaimed(next.status(), continuation) : StepEnd.committed(next.status());
    }
}
