package dev.coop.internal;

import dev.coop.Barrier;
import dev.coop.BarrierDecision;
import dev.coop.CooperationContext;
import dev.coop.CooperationStrategy;
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
    private final EngineContext engine;
    private final Transitions transitions;

    Decisions(Transitions transitions) {
        this.transitions = transitions;
        this.engine = transitions.engine();
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
        return apply(c, run, decide(saga, barrier), rollbackPath, seq, children, now, advance);
    }

    /**
     * A run with children still pending was claimed because the time its strategy asked for came: ask again.
     *
     * @return true when the run may continue at once (it waits for nobody any more)
     */
    boolean recheck(Connection c, ClaimedRun run, Saga<?> saga, boolean rollbackPath) throws SQLException {
        Instant now = run.claimedAt().toInstant();
        int seq = rollbackPath ? run.rollbackSeq() : run.stepsDone() - 1;
        int notStarted = rollbackPath ? 0 : engine.store().countUnstarted(c, run.id(), seq);
        CooperationContext context = engine.json().readContext(run.context());
        Barrier barrier = new Barrier(facts(run, saga, context, now, run.cancellation()), rollbackPath,
                run.waitingSince() == null ? now : run.waitingSince().toInstant(), run.pendingChildren(), notStarted);
        Advance advance = Advance.from(run);
        int pending = apply(c, run, decide(saga, barrier), rollbackPath, seq, run.pendingChildren(), now, advance);
        advance.stillWaiting(pending);
        if (pending == 0) {
            advance.status(RunStatus.RUNNABLE).runnableAt(null);
        }
        RunStatus status = transitions.commit(c, run, List.of(), advance);
        if (status == RunStatus.RUNNABLE && advance.runnableAt() != null) {
            engine.dispatcher().dueIn(java.time.Duration.between(now, advance.runnableAt().toInstant()).toMillis());
            return false;
        }
        return status == RunStatus.RUNNABLE;
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
