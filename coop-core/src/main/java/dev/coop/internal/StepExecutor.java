package dev.coop.internal;

import dev.coop.ChildRollbackFailedException;
import dev.coop.ChildRolledBackException;
import dev.coop.CooperationException;
import dev.coop.CoopValidationException;
import dev.coop.EventType;
import dev.coop.Failure;
import dev.coop.RetryPolicy;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes one transaction of a claimed run on the happy path: its next step, its child-failure handler, its final
 * COMMITTED, or giving up; rollback-path transactions go to {@link RollbackExecutor}. Every path ends with the
 * transaction committed or rolled back; the claim's row lock is held until then.
 */
final class StepExecutor {
    private static final Logger log = LoggerFactory.getLogger(StepExecutor.class);

    private final EngineContext engine;
    private final Transitions transitions;
    private final RollbackExecutor rollback;

    StepExecutor(EngineContext engine) {
        this.engine = engine;
        this.transitions = new Transitions(engine);
        this.rollback = new RollbackExecutor(transitions);
    }

    /** @return true when the run is runnable again at once and may continue on this connection */
    boolean execute(Connection c, ClaimedRun run) throws SQLException {
        try {
            return executeClaimed(c, run);
        } catch (RuntimeException e) {
            engineFailed(c, run, e);
            return false;
        }
    }

    /**
     * Coop itself could not process the run (a bug, or a log entry it cannot read): park it with the reason, so it
     * neither blocks the runs behind it nor is retried in a tight loop.
     */
    private void engineFailed(Connection c, ClaimedRun run, RuntimeException e) throws SQLException {
        Worker.rollbackQuietly(c);
        log.error("Engine {} could not process run {} (saga {}); parking it", engine.engineId(), run.id(), run.saga(),
                e);
        ClaimedRun again = engine.store().reclaimUnchanged(c, run, engine.engineId());
        if (again == null) {
            c.commit();
            return;
        }
        Failure failure = new Failure("Coop could not process this run: " + e, "dev.coop.EngineFailure",
                transitions.source(run), List.of(), List.of(Failure.of(e, transitions.source(run))));
        transitions.commit(c, again, List.of(), Advance.from(again).status(RunStatus.PARKED).failure(failure.toJson()));
    }

    private boolean executeClaimed(Connection c, ClaimedRun run) throws SQLException {
        Saga<?> saga = engine.sagas().get(run.saga());
        if (run.rollback()) {
            return rollback.execute(c, run, saga);
        }
        if (run.cancellation() != null) { // gave up between steps: no step failed, so none is named
            return transitions.startRollback(c, run, saga, null,
                    Failures.gaveUp(run.cancellation(), transitions.source(run)).failure());
        }
        String unknown = unknownStep(run, saga);
        if (unknown != null) {
            park(c, run, unknown);
            return false;
        }
        if (run.failedChildren() > 0) {
            return handleChildFailures(c, run, saga);
        }
        if (run.stepIndex() == saga.steps().size()) {
            transitions.commit(c, run, List.of(LogEntry.of(EventType.COMMITTED, saga.steps().getLast().name())),
                    Advance.from(run).status(RunStatus.COMMITTED));
            return false;
        }
        return runStep(c, run, saga);
    }

    private <P> boolean runStep(Connection c, ClaimedRun run, Saga<P> saga) throws SQLException {
        Saga.Step<P> step = saga.steps().get(run.stepIndex());
        P payload;
        try {
            payload = transitions.payload(run, saga);
        } catch (CoopValidationException e) {
            return transitions.startRollback(c, run, saga, step.name(), Failure.of(e, transitions.source(run)));
        }
        StepContextImpl<P> context = context(c, run, step.name(), payload);
        if ("SKIP".equals(run.resolution())) {
            log.info("Run {} (saga {}): step '{}' marked done by an operator; not executing it", run.id(), run.saga(),
                    step.name());
            return commitInstance(c, run, saga, step.name(), context, run.stepIndex(), step.retryPolicy());
        }
        Throwable thrown = invoke(() -> step.body().run(context), context);
        if (thrown != null) {
            return stepFailed(c, run, saga, step.name(), step.retryPolicy(), context, thrown);
        }
        return commitInstance(c, run, saga, step.name(), context, run.stepIndex(), step.retryPolicy());
    }

    /** The runs caused by the latest instance did not all commit: ask the step's handler, or roll back. */
    private <P> boolean handleChildFailures(Connection c, ClaimedRun run, Saga<P> saga) throws SQLException {
        int seq = run.stepsDone() - 1;
        int instance = run.history()[seq];
        int index = instance >= 0 ? instance : -1 - instance;
        Saga.Step<P> step = saga.steps().get(index);
        Failure failure = childFailure(c, run, step.name(), seq);
        if (step.childFailureHandler() == null) {
            return transitions.startRollback(c, run, saga, step.name(), failure);
        }
        P payload;
        try {
            payload = transitions.payload(run, saga);
        } catch (CoopValidationException e) {
            return transitions.startRollback(c, run, saga, step.name(), Failure.of(e, transitions.source(run)));
        }
        StepContextImpl<P> context = context(c, run, step.name(), payload);
        CooperationException exception = CooperationException.of(failure);
        Throwable thrown = invoke(() -> step.childFailureHandler().handle(context, exception), context);
        if (thrown != null) {
            return stepFailed(c, run, saga, step.name(), null, context, thrown);
        }
        return commitInstance(c, run, saga, Transitions.instanceName(saga, -1 - index), context, -1 - index, null);
    }

    private Failure childFailure(Connection c, ClaimedRun run, String step, int seq) throws SQLException {
        List<Failure> causes = new ArrayList<>();
        boolean rollbackFailed = false;
        for (Store.ChildFailure child : engine.store().childFailures(c, run.id(), seq)) {
            rollbackFailed |= child.status() == RunStatus.ROLLBACK_FAILED;
            causes.add(Failure.fromJson(child.failure()));
        }
        String type = rollbackFailed ? ChildRollbackFailedException.TYPE : ChildRolledBackException.TYPE;
        String message = causes.size() + (causes.size() == 1 ? " run" : " runs") + " caused by step '" + step + "' "
                + (rollbackFailed ? "failed to roll back" : "rolled back");
        return new Failure(message, type, transitions.source(run), List.of(), causes);
    }

    /** A step or handler instance succeeded: write what it launched, record it, and move the run on. */
    private boolean commitInstance(Connection c, ClaimedRun run, Saga<?> saga, String name, StepContextImpl<?> context,
            int instance, RetryPolicy policy) throws SQLException {
        try {
            List<String> woken = new ArrayList<>();
            int children = 0;
            if (!context.scoped.isEmpty()) {
                Map<String, Integer> created = engine.store().emit(c, run.lineage(), run.id(), run.stepsDone(),
                        saga.name(), engine.engineId(), name, context.scoped);
                children = created.values().stream().mapToInt(Integer::intValue).sum();
                woken.addAll(created.keySet());
            }
            if (!context.global.isEmpty()) {
                woken.addAll(engine.store()
                        .emit(c, null, null, null, saga.name(), engine.engineId(), name, context.global).keySet());
            }
            int nextStep = instance >= 0 ? instance + 1 : run.stepIndex();
            List<LogEntry> entries = new ArrayList<>(2);
            entries.add(LogEntry.of(EventType.SUSPENDED, name));
            RunStatus status = children > 0
                    ? RunStatus.WAITING
                    : nextStep >= saga.steps().size() ? RunStatus.COMMITTED : RunStatus.RUNNABLE;
            if (status == RunStatus.COMMITTED) {
                entries.add(LogEntry.of(EventType.COMMITTED, saga.steps().getLast().name()));
            }
            String nextName = nextStep < saga.steps().size() ? saga.steps().get(nextStep).name() : null;
            String finalName = nextName == null ? saga.steps().getLast().name() : null;
            return transitions.commit(c, run, entries,
                    Advance.from(run).executed(instance, nextStep, nextName, finalName, children).status(status),
                    woken) == RunStatus.RUNNABLE;
        } catch (SQLException | RuntimeException e) {
            return writeFailed(c, run, saga, name, e);
        }
    }

    /**
     * User code (a step or a child-failure handler) threw. Its writes are undone back to the savepoint taken before
     * it touched the connection, keeping the run's row lock, so no other engine can run it meanwhile. Then, in the
     * same transaction: database trouble is retried later, a cancellation makes the run give up, a retry policy may
     * schedule another attempt or park the run, and anything else rolls the run back.
     */
    private boolean stepFailed(Connection c, ClaimedRun run, Saga<?> saga, String step, RetryPolicy policy,
            StepContextImpl<?> context, Throwable thrown) throws SQLException {
        try {
            context.discardWrites();
        } catch (SQLException e) {
            transitions.retryLater(c, run, step, e, false);
            return false;
        }
        boolean interruptedByShutdown = thrown instanceof InterruptedException && engine.dispatcher().stopped();
        if (Failures.isInfrastructure(thrown) || interruptedByShutdown) {
            transitions.retryLater(c, run, step, thrown, true);
            return false;
        }
        String cancellation = engine.store().cancellation(c, run.lineage());
        if (cancellation != null) {
            return transitions.startRollback(c, run, saga, step,
                    Failures.gaveUp(cancellation, transitions.source(run)).failure());
        }
        Failure failure = Failure.of(thrown, transitions.source(run));
        String json = failure.toJson();
        boolean retryable = policy != null && !(thrown instanceof CooperationException);
        try {
            if (retryable && policy.shouldRetry(thrown, run.attempt())) {
                long delay = policy.delayAfter(run.attempt()).toMillis();
                log.info("Step '{}' of run {} (saga {}) failed on attempt {} ({}); retrying in {} ms", step, run.id(),
                        run.saga(), run.attempt(), thrown.toString(), delay);
                transitions.commit(c, run, List.of(),
                        Advance.from(run).attempt(run.attempt() + 1, delay, json).checkingCancellation());
                engine.dispatcher().dueIn(delay);
                return false;
            }
            if (retryable && policy.parksWhenExhausted()) {
                log.warn("Step '{}' of run {} (saga {}) failed on its last attempt {} ({}); parked for an operator",
                        step, run.id(), run.saga(), run.attempt(), thrown.toString());
                transitions.commit(c, run, List.of(),
                        Advance.from(run).status(RunStatus.PARKED).failure(json).checkingCancellation());
                return false;
            }
        } catch (SQLException e) {
            return writeFailed(c, run, saga, step, e); // cancelled meanwhile, or database trouble
        }
        log.info("Step '{}' of run {} (saga {}) failed: {}", step, run.id(), run.saga(), thrown.toString());
        return transitions.startRollback(c, run, saga, step, failure);
    }

    /**
     * Writing a transition failed (database trouble, a cancellation detected at commit, or data the database
     * refused). The whole transaction is rolled back; the run is re-locked only if nobody moved it meanwhile.
     */
    private boolean writeFailed(Connection c, ClaimedRun run, Saga<?> saga, String step, Throwable thrown)
            throws SQLException {
        Worker.rollbackQuietly(c);
        if (!Failures.isCancelled(thrown) && Failures.isInfrastructure(thrown)) {
            transitions.retryLater(c, run, step, thrown, false);
            return false;
        }
        ClaimedRun again = engine.store().reclaimUnchanged(c, run, engine.engineId());
        if (again == null) {
            c.commit(); // another engine took the run meanwhile and moved it on
            return false;
        }
        if (again.cancellation() != null) {
            return transitions.startRollback(c, again, saga, step,
                    Failures.gaveUp(again.cancellation(), transitions.source(run)).failure());
        }
        log.info("Step '{}' of run {} (saga {}) could not be committed: {}", step, run.id(), run.saga(),
                thrown.toString());
        return transitions.startRollback(c, again, saga, step, Failure.of(thrown, transitions.source(run)));
    }

    private void park(Connection c, ClaimedRun run, String reason) throws SQLException {
        log.warn("Run {} (saga {}) parked: {}", run.id(), run.saga(), reason);
        Failure failure = new Failure(reason, "dev.coop.UnknownStep", transitions.source(run), List.of(), List.of());
        transitions.commit(c, run, List.of(),
                Advance.from(run).status(RunStatus.PARKED).failure(failure.toJson()));
    }

    /** Why the run cannot continue with this saga definition (steps removed or renamed by a deploy), or null. */
    private static String unknownStep(ClaimedRun run, Saga<?> saga) {
        int size = saga.steps().size();
        if (run.stepIndex() > size) {
            return "Saga '" + saga.name() + "' has " + size + " steps, but this run was at step number "
                    + (run.stepIndex() + 1) + "; was the saga changed while it ran?";
        }
        String expected = run.stepIndex() < size ? saga.steps().get(run.stepIndex()).name() : null;
        if (run.nextStep() != null && !run.nextStep().equals(expected)) {
            return "Saga '" + saga.name() + "' has no step '" + run.nextStep() + "' at position "
                    + (run.stepIndex() + 1)
                    + (expected == null ? " any more" : " (it has '" + expected + "' there)")
                    + "; was the step removed or renamed while this run waited?";
        }
        for (int instance : run.history()) {
            if ((instance >= 0 ? instance : -1 - instance) >= size) {
                return "Saga '" + saga.name() + "' has " + size + " steps, but this run executed step number "
                        + ((instance >= 0 ? instance : -1 - instance) + 1) + "; was the saga changed while it ran?";
            }
        }
        return null;
    }

    private <P> StepContextImpl<P> context(Connection c, ClaimedRun run, String step, P payload) {
        return new StepContextImpl<>(run, step, payload, engine.engineId(), c, engine.json(), engine.store(), true);
    }

    /** Runs user code, turning anything it throws into a value; the context's connection is closed afterwards. */
    static Throwable invoke(UserCode code, StepContextImpl<?> context) {
        try {
            code.run();
            return null;
        } catch (Throwable t) {
            return t;
        } finally {
            context.close();
            if (Thread.interrupted()) {
                log.debug("Step code of run {} left its thread interrupted; cleared", context.runId());
            }
        }
    }

    @FunctionalInterface
    interface UserCode {
        void run() throws Exception;
    }
}
