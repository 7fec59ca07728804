package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Advance;
import dev.coop.internal.join.JoinBook;
import dev.coop.internal.store.LogEntry;
import dev.coop.internal.store.LogNames;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Counted;

import dev.coop.failure.ChildRollbackFailedException;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.EventType;
import dev.coop.failure.Failure;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * The transactions the happy path and the rollback path share: committing a transition, starting a rollback,
 * retrying after database trouble, and naming step instances in the log.
 */
final class Transitions {

    private final EngineContext engine;
    private final JoinBook joins;
    private final RetryLater retries;
    /** Whether the next commit may also reclaim its run when it stays runnable now (set by the worker). */
    private boolean continuationAllowed;
    /** Whether the latest commit tried to reclaim its run, and what it got (null: runnable no more, or taken). */
    private boolean continuationTried;
    private ClaimedRun continuation;
    /** The round this transaction belongs to (its commit and what follows it wait for the round), or null. */
    private StepRound round;
    /** The payload text this worker read last without failing (compared by identity). */
    private String readable;

    Transitions(EngineContext engine) {
        this.engine = engine;
        this.joins = new JoinBook(engine.store(), engine.json());
        this.retries = new RetryLater(engine, this);
    }

    EngineContext engine() {
        return engine;
    }

    /** The transactions from now on are part of {@code round} (null: each commits on its own). */
    void joinRound(StepRound round) {
        this.round = round;
    }

    /** Whether the transaction is part of a round: a failure that needs the whole transaction rolled back aborts it. */
    boolean inRound() {
        return round != null;
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
     * Appends the events, moves the run, counts it off at its parent when it finished (a parent whose last step
     * already ran commits here too, and so on up), settles the join memberships of the messages that finished,
     * commits, then wakes whoever the commit made runnable.
     */
    RunStatus commit(Connection c, ClaimedRun run, List<LogEntry> entries, Advance next, Collection<String> woken)
            throws SQLException {
        if (!next.status().isFinished()) {
            return commitUnfinished(c, run, entries, next, woken);
        }
        if (round != null && round.mayDefer(run, next)) { // the round writes it, counts it off, checks memberships
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
                    : engine.store().countOff(c, parent.rootId(), parent.parentId(), RunStatus.COMMITTED,
                            engine.engineId(),
                            run.claimedAt());
        }
        java.util.Set<String> joined = commitUnlessJoined(c, run, committedAbove);
        Counted last = parent;
        afterCommit(() -> {
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
        return next.status();
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
        if (round == null && engine.store().commitUnlessJoined(c, finished)) {
            return java.util.Set.of();
        }
        java.util.Set<String> joined = joins.runsFinished(c, run.messageId(), committedAbove); // and theirs
        commitNow(c);
        return joined;
    }

    /**
     * The last transaction of a run with no parent to count off: its advance, the check that its message is no pending
     * join member, and the COMMIT, in one round trip. When a membership is pending the check stops the COMMIT; the
     * memberships are then settled and committed as in {@link #commit}.
     */
    private RunStatus commitFinishedAlone(Connection c, ClaimedRun run, List<LogEntry> entries, Advance next,
            Collection<String> woken) throws SQLException {
        java.util.Set<String> joined = java.util.Set.of();
        if (round != null) { // the round commits: the advance, then the memberships settled if any are pending
            engine.store().advance(c, run, engine.engineId(), entries, next);
            joined = joins.runsFinished(c, run.messageId(), List.of());
        } else if (!engine.store().advanceFinishedAndCommit(c, run, engine.engineId(), entries, next)) {
            joined = joins.runsFinished(c, run.messageId(), List.of());
            c.commit();
        }
        java.util.Set<String> settled = joined;
        afterCommit(() -> {
            woken.forEach(engine.dispatcher()::wake);
            settled.forEach(engine.dispatcher()::wake);
            engine.completions().finished(run.messageId(), run.saga(), next.status());
        });
        return next.status();
    }

    /**
     * The last transaction of a run in a round, written by the round with the others' (see {@link StepRound}): its
     * advance, its count-off at its parent when it has one, the check of the join memberships, the commit.
     */
    private RunStatus deferFinished(ClaimedRun run, List<LogEntry> entries, Advance next, Collection<String> woken) {
        round.defer(new Store.Move(run, entries, next));
        afterCommit(() -> {
            woken.forEach(engine.dispatcher()::wake);
            engine.completions().finished(run.messageId(), run.saga(), next.status());
        });
        return next.status();
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

    RunStatus commit(Connection c, ClaimedRun run, List<LogEntry> entries, Advance next) throws SQLException {
        return commit(c, run, entries, next, List.of());
    }

    /**
     * A run that did not finish has nothing to count off or settle: its advance and the COMMIT go in one round trip.
     * When it stays runnable now and the worker may continue it, the same round trip begins the next transaction
     * and reclaims the run ({@link #takeContinuation()}); the caller must then return at once, leaving that
     * transaction to the worker.
     */
    private RunStatus commitUnfinished(Connection c, ClaimedRun run, List<LogEntry> entries, Advance next,
            Collection<String> woken) throws SQLException {
        if (round != null) { // the round commits; a run advances one step per transaction, so no continuation
            if (round.mayDefer(run, next)) {
                round.defer(new Store.Move(run, entries, next)); // sent with others' (see StepRound)
            } else {
                engine.store().advance(c, run, engine.engineId(), entries, next);
            }
            afterCommit(() -> woken.forEach(engine.dispatcher()::wake));
            return next.status();
        }
        boolean reclaim = continuationAllowed && next.status() == RunStatus.RUNNABLE && next.runnableAt() == null
                && next.delayMillis() == 0;
        try {
            continuation = engine.store().advanceAndCommit(c, run, engine.engineId(), entries, next, reclaim);
            continuationTried = reclaim;
        } finally {
            woken.forEach(engine.dispatcher()::wake); // also when the commit's fate is unknown: a spare wake is free
        }
        return next.status();
    }

    /** Lets the next commit reclaim its run (or not), and forgets an earlier reclaim. */
    void allowContinuation(boolean allowed) {
        continuationAllowed = allowed;
        continuationTried = false;
        continuation = null;
    }

    /** Whether the latest commit reclaimed its run in a new transaction: then {@link #takeContinuation()} says how. */
    boolean continuationTried() {
        return continuationTried;
    }

    /** The run the latest commit reclaimed in the new transaction it began, or null; forgets it. */
    ClaimedRun takeContinuation() {
        ClaimedRun run = continuation;
        continuation = null;
        continuationTried = false;
        return run;
    }

    /**
     * Records ROLLING_BACK for a run whose step (or child-failure handling, or give-up) failed in this transaction,
     * then either finishes it at once (nothing was completed) or moves it to the rollback path.
     *
     * @param finallyDone the index of a step whose finally part ran in this transaction, or null
     * @return true when the rollback continues at once
     */
    boolean startRollback(Connection c, ClaimedRun run, Saga<?> saga, String step, Failure failure,
            Integer finallyDone) throws SQLException {
        return startRollbackAfterFinally(c, run, saga, step, failure,
                finallyDone == null ? null : new FinallyRan(finallyDone, null));
    }

    /** A finally part that ran in this transaction: its step's index, and what it launched (null: nothing). */
    record FinallyRan(int index, StepContextImpl<?> launched) {
    }

    /**
     * As {@link #startRollback(Connection, ClaimedRun, Saga, String, Failure, Integer)}, after a finally part ran
     * in the failing transaction: what it launched is written now, and the rollback waits for it before it goes on
     * (those runs belong to no executed step, so they are not rolled back).
     */
    boolean startRollbackAfterFinally(Connection c, ClaimedRun run, Saga<?> saga, String step, Failure failure,
            FinallyRan finallyRan) throws SQLException {
        String json = failure.toJson();
        List<LogEntry> entries = new ArrayList<>(2);
        entries.add(new LogEntry(EventType.ROLLING_BACK, step, json));
        Integer finallyDone = finallyRan == null ? null : finallyRan.index();
        List<String> woken = new ArrayList<>();
        int launched = finallyRan == null
                ? 0
                : emitFinally(c, run, saga, finallyRan.launched(), run.stepsDone(), woken);
        int seq = run.stepsDone() - 1;
        if (seq < 0 && launched == 0) {
            finish(c, run, entries, rollbackOf(saga.steps().getFirst().name()), json, finallyDone);
            return false;
        }
        Advance next = Advance.from(run).rollingBack(seq, seq < 0 ? FINISH : "CHILDREN", json, launched)
                .failure(json);
        if (launched > 0) {
            next.status(RunStatus.WAITING);
        }
        if (finallyDone != null) {
            next.finallyDone(finallyDone);
        }
        return commit(c, run, entries, next, woken) == RunStatus.RUNNABLE;
    }

    /**
     * The rollback stage of a run that only waits for what a finally part launched during its rollback, and then
     * ends ROLLED_BACK (or ROLLBACK_FAILED, as {@link #finish} decides).
     */
    static final String FINISH = "FINISH";

    /**
     * Writes what a finally part launched, in this run's scope (as children of step instance {@code parentSeq}) and
     * on the global scope; wakes nothing before the commit. The finally part runs as the run starts or goes on with
     * its rollback, so what it launched in the scope is work of the rollback: the cancellation the rollback answers
     * does not reach it.
     *
     * @return how many runs in this run's scope were created (to wait for)
     */
    int emitFinally(Connection c, ClaimedRun run, Saga<?> saga, StepContextImpl<?> part, int parentSeq,
            Collection<String> woken) throws SQLException {
        if (part == null) {
            return 0;
        }
        return part.launches.write(c, new StepLaunches.Origin(run, saga.name(), part.step(), parentSeq, true),
                woken);
    }

    /**
     * Ends a rollback: ROLLED_BACK, unless the rollback was caused by runs whose own rollback failed (an unhandled
     * {@link dev.coop.failure.ChildRollbackFailedException}): then part of the tree could not be undone, and the run
     * ends ROLLBACK_FAILED so that its parent, and the outcome, say so.
     */
    void finish(Connection c, ClaimedRun run, List<LogEntry> entries, String step, String cause, Integer finallyDone)
            throws SQLException {
        boolean childRollbackFailed = dev.coop.failure.ChildRollbackFailedException.TYPE
                .equals(Failure.fromJson(cause).type());
        if (childRollbackFailed) {
            entries.add(new LogEntry(EventType.ROLLBACK_FAILED, step, cause));
        } else {
            entries.add(LogEntry.of(EventType.ROLLED_BACK, step));
        }
        Advance next = Advance.from(run).rollingBack(-1, null, cause, 0)
                .status(childRollbackFailed ? RunStatus.ROLLBACK_FAILED : RunStatus.ROLLED_BACK).failure(cause);
        if (finallyDone != null) {
            next.finallyDone(finallyDone);
        }
        commit(c, run, entries, next);
    }

    /** Coop's own bookkeeping failed, not the step: see {@link RetryLater#retry}. */
    void retryLater(Connection c, ClaimedRun run, String step, Throwable cause, boolean lockHeld) throws SQLException {
        retries.retry(c, run, step, cause, lockHeld);
    }

    /** Reads the run's payload as the saga's type; a {@link CoopValidationException} says why it cannot. */
    <P> P payload(ClaimedRun run, Saga<P> saga) {
        try {
            P payload = engine.json().readPayload(run.payload(), saga.topic().payloadType());
            readable = run.payload();
            return payload;
        } catch (Exception e) {
            throw new CoopValidationException("Payload of message " + run.messageId() + " on topic '" + run.topic()
                    + "' cannot be read as " + saga.topic().payloadType().getName() + ": " + e.getMessage(), e);
        }
    }

    /**
     * The run's payload for a step: read now when this worker has not read this very text (the claim's, by identity:
     * a continuation's reclaim passes it on), so that a payload that cannot be read fails the step before it runs;
     * otherwise read when the step asks for it (it was read before, so it can be read again), each step its own copy.
     */
    <P> java.util.function.Supplier<P> stepPayload(ClaimedRun run, Saga<P> saga) {
        if (run.payload() != null && run.payload() == readable) {
            return () -> payload(run, saga);
        }
        P payload = payload(run, saga);
        return () -> payload;
    }

    String source(ClaimedRun run) {
        return run.saga() + "[" + engine.engineId() + "]";
    }

    /** The log name of an executed instance: the step's name, marked when it was a child-failure handler run. */
    static String instanceName(Saga<?> saga, int instance) {
        return instance >= 0
                ? saga.steps().get(instance).name()
                : saga.steps().get(-1 - instance).name() + " (child failure handler)";
    }

    static String rollbackOf(String name) {
        return LogNames.ROLLBACK_PREFIX + name;
    }

    static String childRollbackOf(String name) {
        return LogNames.ROLLBACK_PREFIX + name + LogNames.CHILDREN_SUFFIX;
    }
}
