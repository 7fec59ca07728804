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
    private final StepTransaction tx;
    private final Commits commits;
    private final Rollbacks rollbacks;
    private final ExternalTasks tasks;

    Decisions(EngineContext engine, StepPath path) {
        this.engine = engine;
        this.tx = path.tx();
        this.commits = path.commits();
        this.rollbacks = path.rollbacks();
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
     * How a run waits for its children, as the strategy decided: WAITING until they finished, or RUNNABLE again at
     * {@code runnableAt} (a barrier timer, a deadline, an external task's timeout), and how many it still awaits.
     */
    record Wait(RunStatus status, OffsetDateTime runnableAt, int pending) {
        /** Waiting for the children to finish, and for nothing else. */
        static Wait untilDone(int pending) {
            return new Wait(RunStatus.WAITING, null, pending);
        }

        /** Due again at {@code at} as well (an external task's own timeout), unless due earlier already. */
        Wait wakeAt(OffsetDateTime at) {
            return status == RunStatus.WAITING || (runnableAt != null && runnableAt.isAfter(at))
                    ? new Wait(RunStatus.RUNNABLE, at, pending)
                    : this;
        }

        /** The same wait with {@code n} children awaited. */
        Wait pending(int n) {
            return new Wait(status, runnableAt, n);
        }

        /** The run's move, waiting so. */
        Advance applyTo(Advance advance) {
            return advance.status(status).runnableAt(runnableAt);
        }
    }

    /**
     * A step (or rollback stage) is about to commit with {@code children} to wait for: how it waits.
     *
     * @return the wait, with how many children are still awaited
     */
    Wait onWait(Connection c, ClaimedRun run, Saga<?> saga, CooperationContext context, boolean rollbackPath,
            int seq, int children) throws SQLException {
        Instant now = run.claimedAt().toInstant();
        Barrier barrier = new Barrier(facts(run, saga, context, now, null), rollbackPath, now, children,
                rollbackPath ? 0 : children);
        Wait wait = apply(c, run, decide(saga, barrier), rollbackPath, seq, children, now);
        if (!rollbackPath && wait.pending() > 0) {
            wait = wakeAtDeadline(wait, context, null);
        }
        return wait;
    }

    /**
     * A run waiting for children on the happy path is due again at its deadline (happy-path or absolute), so that it
     * gives up then even when a child cannot start (its engine is down): the barrier timer is brought forward to the
     * deadline, or set there. A deadline at or before {@code notBefore} sets nothing (it was checked already).
     */
    private static Wait wakeAtDeadline(Wait wait, CooperationContext context, Instant notBefore) {
        Deadline deadline = Deadlines.applying(context, false).orElse(null);
        if (deadline == null || (notBefore != null && !deadline.at().isAfter(notBefore))) {
            return wait;
        }
        return wait.wakeAt(OffsetDateTime.ofInstant(deadline.at(), ZoneOffset.UTC));
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
        Wait wait = waitingFor == 0
                ? new Wait(RunStatus.RUNNABLE, null, 0)
                : apply(c, run, decide(saga, barrier), rollbackPath, seq, waitingFor, now);
        if (wait.pending() > 0 && !rollbackPath) {
            wait = wakeAtDeadline(wait, context, now);
            if (timedOut.next() != null) {
                wait = wait.wakeAt(timedOut.next());
            }
        }
        if (wait.pending() == 0) {
            wait = new Wait(RunStatus.RUNNABLE, null, 0);
        }
        wait.applyTo(advance).stillWaiting(wait.pending());
        StepEnd end = commits.commit(c, run, List.of(), advance);
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
        String source = engine.source(run);
        Failure gaveUp = gaveUp(reason, source);
        Failure neverStarted = new Failure("Never started: " + run.saga() + " gave up while waiting for it ("
                + reason.message() + ")", GaveUpException.TYPE, source, List.of(), List.of(reason));
        List<java.util.UUID> settled = engine.store().settleUnstarted(c, run.rootId(), run.id(), seq,
                neverStarted.toJson(), engine.engineId());
        int pending = run.pendingChildren() - settled.size();
        java.util.Set<String> joined = commits.othersFinished(c, settled);
        StepEnd end;
        if (pending > 0) {
            log.info("Run {} (saga {}) gives up while waiting ({}); {} child run(s) that started must finish first",
                    run.id(), run.saga(), dev.coop.render.TerminalText.escape(reason.message()), pending);
            Advance advance = Wait.untilDone(pending).applyTo(Advance.from(run)).stillWaiting(pending);
            end = commits.commit(c, run, List.of(), advance);
        } else {
            log.info("Run {} (saga {}) gives up while waiting: {}", run.id(), run.saga(),
                    dev.coop.render.TerminalText.escape(reason.message()));
            end = rollbacks.start(c, run, saga, null, gaveUp, null);
        }
        tx.afterCommit(() -> {
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

    /** What the strategy's decision means for a run awaiting {@code pending} children. */
    private Wait apply(Connection c, ClaimedRun run, BarrierDecision decision, boolean rollbackPath, int seq,
            int pending, Instant now) throws SQLException {
        return switch (decision) {
            case BarrierDecision.WaitUntil until when until.at().isAfter(now) ->
                new Wait(RunStatus.RUNNABLE, OffsetDateTime.ofInstant(until.at(), ZoneOffset.UTC), pending);
            case BarrierDecision.StopWaitingForUnstarted ignored when !rollbackPath ->
                Wait.untilDone(pending - engine.store().detachUnstarted(c, run.rootId(), run.id(), seq));
            default -> Wait.untilDone(pending);
        };
    }
}
