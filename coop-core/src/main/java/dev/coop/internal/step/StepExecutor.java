package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Advance;
import dev.coop.internal.store.LogEntry;
import dev.coop.internal.task.ExternalTasks;

import dev.coop.CooperationContext;
import dev.coop.CooperationStrategy;
import dev.coop.RunFacts;
import dev.coop.StartDecision;
import dev.coop.inspect.EventType;
import dev.coop.failure.Failure;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes one transaction of a claimed run: routes it to the stage that handles it (its next step, its child-failure
 * handler or its final COMMITTED on the happy path, in {@link RunBodies} then {@link CommitInstance}; rollback-path
 * transactions in {@link RollbackExecutor}), or gives up, or parks it. Whatever goes wrong goes to
 * {@link StepRecovery}. Every path ends with the transaction committed or rolled back (or, in a round, left to the
 * round's commit); the claim's row lock is held until then.
 */
final class StepExecutor {
    private static final Logger log = LoggerFactory.getLogger(StepExecutor.class);

    private final EngineContext engine;
    private final StepTransaction tx;
    private final Rollbacks rollbacks;
    private final Commits commits;
    private final RollbackExecutor rollback;
    private final Decisions decisions;
    private final StepRecovery failures;
    private final RunBodies bodies;

    StepExecutor(EngineContext engine) {
        this.engine = engine;
        ExternalTasks tasks = new ExternalTasks(engine.store().schema(), engine.store().time());
        StepPath path = StepPath.of(engine);
        this.tx = path.tx();
        this.commits = path.commits();
        this.rollbacks = path.rollbacks();
        this.decisions = new Decisions(engine, path);
        this.rollback = new RollbackExecutor(engine, path, decisions);
        this.failures = new StepRecovery(engine, path);
        this.bodies = new RunBodies(engine, path, failures,
                new CommitInstance(engine, tx, commits, decisions, tasks, failures));
    }

    /**
     * @param mayContinue whether the worker would continue the run at once: then the transaction's commit may also
     *        reclaim it ({@link StepEnd#reclaimTried()})
     * @return how the transaction ended: whether the run may continue at once on this connection, and the reclaim
     */
    StepEnd execute(Connection c, ClaimedRun run, boolean mayContinue) throws SQLException {
        tx.allowContinuation(mayContinue);
        try {
            return executeClaimed(c, run);
        } catch (SQLException e) {
            if (!Throwables.endedTransaction(e)) {
                RoundAborted.ifInRound(tx, e);
                throw e;
            }
            return failures.transactionEnded(c, run, e);
        } catch (RoundAborted e) {
            throw e;
        } catch (RuntimeException | StackOverflowError | AssertionError | LinkageError e) {
            // Coop's own code, or a strategy the engine called, failed: park the run with the cause. (User step code
            // never gets here: invoke() turns whatever it throws into a step failure.)
            return failures.engineFailed(c, run, e);
        }
    }

    /**
     * Executes the run's next transaction as part of {@code round}: the round commits it, with the others. Whatever
     * needs the whole transaction rolled back throws {@link RoundAborted}.
     *
     * @return true when the run is runnable again at once (after the round's commit)
     */
    boolean executeInRound(Connection c, ClaimedRun run, StepRound round) throws SQLException {
        tx.joinRound(round);
        try {
            return execute(c, run, false).continueNow();
        } finally {
            tx.joinRound(null);
        }
    }

    /** The run's transaction is no longer part of a round (its slow step left it, see {@link RoundSplit}). */
    void leaveRound() {
        tx.joinRound(null);
    }

    private StepEnd executeClaimed(Connection c, ClaimedRun run) throws SQLException {
        Saga<?> saga = engine.sagas().get(run.saga(), run.sagaVersion());
        if (run.rollback()) {
            return rollback.execute(c, run, saga);
        }
        if (run.pendingChildren() > 0) { // the time its strategy asked for came while children still run
            return decisions.recheck(c, run, saga, false);
        }
        CooperationContext context = engine.json().readContext(run.context());
        CooperationStrategy strategy = decisions.strategy(saga);
        RunFacts facts = Decisions.facts(run, saga, context, run.claimedAt().toInstant(), run.cancellation());
        if (!run.started() && strategy.start(facts) instanceof StartDecision.Ignore ignore) {
            park(c, run, ignore.reason(), "dev.coop.Ignored");
            return StepEnd.STOP;
        }
        Failure giveUp = strategy.giveUpOnHappyPath(facts).orElse(null);
        if (giveUp != null) { // gave up between steps: no step failed, so none is named
            log.info("Run {} (saga {}) gives up: {}", run.id(), run.saga(),
                    dev.coop.render.TerminalText.escape(giveUp.message()));
            return rollbacks.start(c, run, saga, null, Decisions.gaveUp(giveUp, engine.source(run)),
                    null);
        }
        String unknown = unknownStep(run, saga);
        if (unknown != null) {
            park(c, run, unknown, "dev.coop.UnknownStep");
            return StepEnd.STOP;
        }
        if (run.failedChildren() > 0) {
            return bodies.handleChildFailures(c, run, saga, context);
        }
        if (run.stepIndex() == saga.steps().size()) {
            return commits.commit(c, run,
                    List.of(LogEntry.of(EventType.COMMITTED, saga.steps().getLast().name())),
                    Advance.from(run).status(RunStatus.COMMITTED));
        }
        return bodies.runStep(c, run, saga, context);
    }

    private void park(Connection c, ClaimedRun run, String reason, String type) throws SQLException {
        log.warn("Run {} (saga {}) parked: {}", run.id(), run.saga(), dev.coop.render.TerminalText.escape(reason));
        Failure failure = new Failure(reason, type, engine.source(run), List.of(), List.of());
        engine.store().attempts().parked(c, run, engine.engineId(), run.nextStep(), run.attempt(), failure.toJson());
        commits.commit(c, run, List.of(),
                Advance.from(run).status(RunStatus.PARKED).failure(failure.toJson()));
    }

    /**
     * Why the run cannot continue with this saga definition (steps removed or renamed by a deploy that kept the
     * saga's version), or null. A deploy that changes steps under a new version never gets here: runs keep their
     * version and only engines that have it claim them.
     */
    private static final String NEW_VERSION = "a deploy that changes a saga's steps should give it a new version"
            + " (Saga.Builder.version), so that runs in flight keep the steps they started with";

    private static String unknownStep(ClaimedRun run, Saga<?> saga) {
        int size = saga.steps().size();
        if (run.stepIndex() > size) {
            return "Saga '" + saga.name() + "' has " + size + " steps, but this run was at step number "
                    + (run.stepIndex() + 1) + "; was the saga changed while it ran? (" + NEW_VERSION + ")";
        }
        String expected = run.stepIndex() < size ? saga.steps().get(run.stepIndex()).name() : null;
        if (run.nextStep() != null && !run.nextStep().equals(expected)) {
            return "Saga '" + saga.name() + "' has no step '" + run.nextStep() + "' at position "
                    + (run.stepIndex() + 1)
                    + (expected == null ? " any more" : " (it has '" + expected + "' there)")
                    + "; was the step removed or renamed while this run waited? (" + NEW_VERSION + ")";
        }
        if (run.history().highestStep() >= size) {
            return "Saga '" + saga.name() + "' has " + size + " steps, but this run executed step number "
                    + (run.history().highestStep() + 1) + "; was the saga changed while it ran? (" + NEW_VERSION + ")";
        }
        return null;
    }
}
