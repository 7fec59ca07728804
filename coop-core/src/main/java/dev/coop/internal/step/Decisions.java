package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Advance;
import dev.coop.internal.task.ExternalTasks;

import dev.coop.Barrier;
import dev.coop.BarrierDecision;
import dev.coop.CooperationContext;
import dev.coop.CooperationStrategy;
import dev.coop.Deadline;
import dev.coop.Deadlines;
import dev.coop.failure.Failure;
import dev.coop.failure.GaveUpException;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunFacts;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/** Asks a run's {@link CooperationStrategy} and carries out its barrier decisions. */
final class Decisions {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(Decisions.class);
    private final EngineContext engine;
    private final Transitions transitions;
    private final ExternalTasks tasks;

    Decisions(Transitions transitions) {
        this.transitions = transitions;
        this.engine = transitions.engine();
        this.tasks = new ExternalTasks(engine.store().schema(), engine.store().time());
    }

    CooperationStrategy strategy(Saga<?> saga) {
        return engine.strategyOf(saga);
    }

    /** What the strategy knows of a claimed run, {@code now} by the engine's time. */
    static RunFacts facts(ClaimedRun run, Saga<?> saga, CooperationContext context, Instant now,
            String cancellationJson) {
        String next = run.stepIndex() < saga.steps().size() ? saga.steps().get(run.stepIndex()).name() : null;
        return new RunFacts(run.id(), run.saga(), new MessageId(run.messageId()),
                new Lineage(Arrays.asList(run.lineage())), run.parentId() == null, run.started(), next,
                run.messageCreatedAt() == null ? now : run.messageCreatedAt().toInstant(), now, context,
                Optional.ofNullable(cancellationJson).map(Failure::fromJson));
    }

    /** A run gives up because of {@code reason}: a {@link GaveUpException} failure caused by it. */
    static Failure gaveUp(Failure reason, String source) {
        return new Failure("Gave up: " + reason.message(), GaveUpException.TYPE, source, List.of(), List.of(reason));
    }

    /**
     * A step (or rollback stage) is about to commit with {@code children} to wait for: how. Sets the advance's status
     * and due time.
     *
     * @return how many children are still awaited
     */
    int onWait(Connection c, ClaimedRun run, Saga<?> saga, CooperationContext context, boolean rollbackPath,
            int seq, int children, Advance advance) throws SQLException {
        Instant now = run.claimedAt().toInstant();
        Barrier barrier = new Barrier(facts(run, saga, context, now, null), rollbackPath, now, children,
                rollbackPath ? 0 : children);
        int pending = apply(c, run, decide(saga, barrier), rollbackPath, seq, children, now, advance);
        if (!rollbackPath && pending > 0) {
            wakeAtDeadline(advance, context, null);
        }
        return pending;
    }

    /**
     * A run waiting for children on the happy path is due again at its deadline (happy-path or absolute), so that it
     * gives up then even when a child cannot start (its engine is down): the barrier timer is brought forward to the
     * deadline, or set there. A deadline at or before {@code notBefore} sets nothing (it was checked already).
     */
    /**
     * A waiting run is due again at {@code at} (an external task's own timeout), unless it is due earlier already.
     */
    static void wakeAt(Advance advance, OffsetDateTime at) {
        if (advance.status() == RunStatus.WAITING
                || (advance.runnableAt() != null && advance.runnableAt().isAfter(at))) {
            advance.status(RunStatus.RUNNABLE).runnableAt(at);
        }
    }

    private static void wakeAtDeadline(Advance advance, CooperationContext context, Instant notBefore) {
        Deadline deadline = Deadlines.applying(context, false).orElse(null);
        if (deadline == null || (notBefore != null && !deadline.at().isAfter(notBefore))) {
            return;
        }
        OffsetDateTime at = OffsetDateTime.ofInstant(deadline.at(), ZoneOffset.UTC);
        if (advance.status() == RunStatus.WAITING
                || (advance.runnableAt() != null && advance.runnableAt().isAfter(at))) {
            advance.status(RunStatus.RUNNABLE).runnableAt(at);
        }
    }

    /**
     * A run with children still pending was claimed because the time its strategy asked for came: ask again.
     *
     * @return how the transaction ended: the run continues at once when it waits for nobody any more
     */
    StepEnd recheck(Connection c, ClaimedRun run, Saga<?> saga, boolean rollbackPath) throws SQLException {
        Instant now = run.claimedAt().toInstant();
        int seq = rollbackPath ? run.rollbackSeq() : run.stepsDone() - 1;
        CooperationContext context = engine.json().readContext(run.context());
        if (!rollbackPath) {
            Failure reason = strategy(saga).giveUpOnHappyPath(facts(run, saga, context, now, run.cancellation()))
                    .orElse(null);
            if (reason != null) {
                return giveUpWhileWaiting(c, run, saga, seq, reason);
            }
        }
        // external tasks whose own timeout passed are settled (child failures); the next timeout wakes the run again
        ExternalTasks.TimedOut timedOut = rollbackPath ? null : tasks.timeOut(c, run, seq, engine.engineId());
        int waitingFor = run.pendingChildren() - (timedOut == null ? 0 : timedOut.count());
        int notStarted = rollbackPath ? 0 : engine.store().countUnstarted(c, run.id(), seq);
        Barrier barrier = new Barrier(facts(run, saga, context, now, run.cancellation()), rollbackPath,
                run.waitingSince() == null ? now : run.waitingSince().toInstant(), waitingFor, notStarted);
        Advance advance = Advance.from(run);
        if (rollbackPath) {
            advance.failure(run.rollbackCause()); // as every advance on the rollback path
        } else { // a cancellation since the claim: seen by the advance, or it wakes the run after its commit
            advance.checkingCancellation();
        }
        int pending = waitingFor == 0
                ? 0
                : apply(c, run, decide(saga, barrier), rollbackPath, seq, waitingFor, now, advance);
        advance.stillWaiting(pending);
        if (pending > 0 && !rollbackPath) {
            wakeAtDeadline(advance, context, now);
            if (timedOut.next() != null) {
                wakeAt(advance, timedOut.next());
            }
        }
        if (pending == 0) {
            advance.status(RunStatus.RUNNABLE).runnableAt(null);
        }
        StepEnd end = transitions.commit(c, run, List.of(), advance);
        if (end.continueNow() && advance.runnableAt() != null) {
            engine.dispatcher().dueIn(java.time.Duration.between(now, advance.runnableAt().toInstant()).toMillis());
            return end.stop();
        }
        return end;
    }

    /**
     * A run waiting for its children gives up (its scope was cancelled, its deadline passed): the children that have
     * not started are settled without running (they never run later), and the run rolls back at once when it waits
     * for nobody else; otherwise it waits, as WAITING, for the children that started (they see the same
     * cancellation or inherited deadline), and gives up when they finished.
     *
     * @return how the transaction ended (continuing at once when the rollback does)
     */
    private StepEnd giveUpWhileWaiting(Connection c, ClaimedRun run, Saga<?> saga, int seq, Failure reason)
            throws SQLException {
        String source = transitions.source(run);
        Failure gaveUp = gaveUp(reason, source);
        Failure neverStarted = new Failure("Never started: " + run.saga() + " gave up while waiting for it ("
                + reason.message() + ")", GaveUpException.TYPE, source, List.of(), List.of(reason));
        List<java.util.UUID> settled = engine.store().settleUnstarted(c, run.id(), seq, neverStarted.toJson(),
                engine.engineId());
        int pending = run.pendingChildren() - settled.size();
        java.util.Set<String> joined = transitions.othersFinished(c, settled);
        StepEnd end;
        if (pending > 0) {
            log.info("Run {} (saga {}) gives up while waiting ({}); {} child run(s) that started must finish first",
                    run.id(), run.saga(), dev.coop.render.TerminalText.escape(reason.message()), pending);
            Advance advance = Advance.from(run).stillWaiting(pending);
            advance.status(RunStatus.WAITING).runnableAt(null);
            end = transitions.commit(c, run, List.of(), advance);
        } else {
            log.info("Run {} (saga {}) gives up while waiting: {}", run.id(), run.saga(),
                    dev.coop.render.TerminalText.escape(reason.message()));
            end = transitions.startRollback(c, run, saga, null, gaveUp, null);
        }
        transitions.afterCommit(() -> {
            joined.forEach(engine.dispatcher()::wake);
            settled.forEach(engine.completions()::finished);
        });
        return end;
    }

    private BarrierDecision decide(Saga<?> saga, Barrier barrier) {
        CooperationStrategy strategy = strategy(saga);
        BarrierDecision d = barrier.rollbackPath()
                ? strategy.resumeRollbackPath(barrier)
                : strategy.resumeHappyPath(barrier);
        return d == null ? BarrierDecision.WAIT : d;
    }

    private int apply(Connection c, ClaimedRun run, BarrierDecision decision, boolean rollbackPath, int seq,
            int pending, Instant now, Advance advance) throws SQLException {
        advance.status(RunStatus.WAITING).runnableAt(null);
        switch (decision) {
            case BarrierDecision.WaitUntil until when until.at().isAfter(now) ->
                advance.status(RunStatus.RUNNABLE).runnableAt(OffsetDateTime.ofInstant(until.at(), ZoneOffset.UTC));
            case BarrierDecision.StopWaitingForUnstarted ignored when !rollbackPath ->
                pending -= engine.store().detachUnstarted(c, run.id(), seq);
            default -> {
            }
        }
        return pending;
    }
}
