package dev.coop.internal.step;

import dev.coop.internal.Listeners;
import dev.coop.internal.StepTransactionHook;
import dev.coop.internal.guard.NetworkTimeouts;
import dev.coop.internal.store.Limits;
import dev.coop.internal.store.LogEntry;
import dev.coop.internal.store.LogNames;
import dev.coop.internal.store.ChildFailure;
import dev.coop.internal.task.ExternalTasks;
import dev.coop.internal.task.TaskRequest;

import dev.coop.Coop;

import dev.coop.failure.ChildRollbackFailedException;
import dev.coop.failure.ChildRolledBackException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.CoopValidationException;
import dev.coop.CooperationContext;
import dev.coop.CooperationStrategy;
import dev.coop.RunFacts;
import dev.coop.StartDecision;
import dev.coop.Deadline;
import dev.coop.inspect.EventType;
import dev.coop.failure.Failure;
import dev.coop.Flow;
import dev.coop.RetryPolicy;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
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
    private final Decisions decisions;
    private final ExternalTasks tasks;

    StepExecutor(EngineContext engine) {
        this.engine = engine;
        this.tasks = new ExternalTasks(engine.store().schema(), engine.store().time());
        this.transitions = new Transitions(engine);
        this.decisions = new Decisions(transitions);
        this.rollback = new RollbackExecutor(transitions, decisions);
    }

    /**
     * @param mayContinue whether the worker would continue the run at once: then the transaction's commit may also
     *        reclaim it ({@link #continuationTried()}, {@link #takeContinuation()})
     * @return true when the run is runnable again at once and may continue on this connection
     */
    boolean execute(Connection c, ClaimedRun run, boolean mayContinue) throws SQLException {
        transitions.allowContinuation(mayContinue);
        try {
            return executeClaimed(c, run);
        } catch (SQLException e) {
            if (!Failures.endedTransaction(e)) {
                RoundAborted.ifInRound(transitions, e);
                throw e;
            }
            return transactionEnded(c, run, e);
        } catch (RoundAborted e) {
            throw e;
        } catch (RuntimeException | StackOverflowError | AssertionError | LinkageError e) {
            // Coop's own code, or a strategy the engine called, failed: park the run with the cause. (User step code
            // never gets here: invoke() turns whatever it throws into a step failure.)
            engineFailed(c, run, e);
            return false;
        }
    }

    /**
     * Executes the run's next transaction as part of {@code round}: the round commits it, with the others. Whatever
     * needs the whole transaction rolled back throws {@link RoundAborted}.
     *
     * @return true when the run is runnable again at once (after the round's commit)
     */
    boolean executeInRound(Connection c, ClaimedRun run, StepRound round) throws SQLException {
        transitions.joinRound(round);
        try {
            return execute(c, run, false);
        } finally {
            transitions.joinRound(null);
        }
    }

    /**
     * In a round, aborts it for {@code run}'s own trouble: after the round's rollback, {@code settlement} settles the
     * run in a transaction of its own, as {@link #execute} settles it when the run is alone, without running user code
     * again. Outside a round, does nothing.
     */
    private void abortRoundFor(ClaimedRun run, Throwable cause, RoundAborted.Settlement settlement) {
        if (transitions.inRound()) {
            throw new RoundAborted(cause, run.id(), c -> {
                transitions.allowContinuation(false);
                return settlement.settle(c);
            });
        }
    }

    /** Whether the transaction's commit began the next one and reclaimed the run in it (or found it gone). */
    boolean continuationTried() {
        return transitions.continuationTried();
    }

    /** The run reclaimed by the transaction's commit, or null; see {@link #continuationTried()}. */
    ClaimedRun takeContinuation() {
        return transitions.takeContinuation();
    }

    /**
     * Coop itself could not process the run (a bug, or a log entry it cannot read): park it with the reason, so it
     * neither blocks the runs behind it nor is retried in a tight loop.
     */
    private void engineFailed(Connection c, ClaimedRun run, Throwable e) throws SQLException {
        abortRoundFor(run, e, alone -> {
            engineFailed(alone, run, e);
            return false;
        });
        transitions.allowContinuation(false); // a reclaim made by the commit is rolled back here
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
        engine.store().attempts().parked(c, again, engine.engineId(), again.nextStep(), again.attempt(),
                failure.toJson());
        transitions.commit(c, again, List.of(), Advance.from(again).status(RunStatus.PARKED).failure(failure.toJson()));
    }

    /**
     * The last line of defence: user code ended the transaction that claimed the run by a route the guarded connection
     * could not refuse (the driver's own classes, unwrapped), so the transaction Coop would commit is not the step's
     * (the advance's transaction-id check, or the step's savepoint, says so). What the code wrote before may be
     * committed and the run's lock was let go: everything since is rolled back, the run is locked again unless another
     * engine moved it meanwhile, and the part fails without running user code again (a failed step's finally part is
     * not run, a failed finally part counts as run): a step, child-failure handler or finally part rolls the run back,
     * a compensation ends it ROLLBACK_FAILED. It is never advanced as if it had succeeded.
     */
    private boolean transactionEnded(Connection c, ClaimedRun run, SQLException e) throws SQLException {
        abortRoundFor(run, e, alone -> transactionEnded(alone, run, e));
        transitions.allowContinuation(false);
        Worker.rollbackQuietly(c);
        ClaimedRun again = engine.store().reclaimUnchanged(c, run, engine.engineId());
        if (again == null) {
            c.commit(); // another engine took the run meanwhile and moved it on
            return false;
        }
        Saga<?> saga = engine.sagas().get(run.saga(), run.sagaVersion());
        String part = partName(run, saga);
        log.error("{} of run {} (saga {}) ended its own transaction, which Coop commits; failing it: {}",
                part == null ? "User code" : "'" + part + "'", run.id(), run.saga(), Failures.describe(e));
        Failure failure = Failure.of(e, transitions.source(run));
        if (again.rollback()) {
            Failure failed = failure.withCauses(List.of(Failure.fromJson(again.rollbackCause())));
            transitions.commit(c, again, List.of(new LogEntry(EventType.ROLLBACK_FAILED, part, failed.toJson())),
                    Advance.from(again).status(RunStatus.ROLLBACK_FAILED).failure(failed.toJson()));
            return false;
        }
        // a finally part that did this counts as run (the rollback path would otherwise run it again)
        Saga.Step<?> step = again.failedChildren() == 0 && again.stepIndex() < saga.steps().size()
                ? saga.steps().get(again.stepIndex())
                : null;
        return transitions.startRollback(c, again, saga, part, failure,
                step != null && step.isFinallyPart() ? step.finallyOf() : null);
    }

    /** The name of the part the claim of {@code run} was executing (for the log), or null. */
    private static String partName(ClaimedRun run, Saga<?> saga) {
        try {
            if (run.rollback()) {
                Integer instance = run.history().rollbackInstance();
                return instance == null ? null : Transitions.rollbackOf(Transitions.instanceName(saga, instance));
            }
            if (run.failedChildren() > 0) {
                int instance = run.history().recent()[0];
                return saga.steps().get(instance >= 0 ? instance : -1 - instance).name();
            }
            return run.stepIndex() < saga.steps().size() ? saga.steps().get(run.stepIndex()).name() : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    private boolean executeClaimed(Connection c, ClaimedRun run) throws SQLException {
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
            return false;
        }
        Failure giveUp = strategy.giveUpOnHappyPath(facts).orElse(null);
        if (giveUp != null) { // gave up between steps: no step failed, so none is named
            log.info("Run {} (saga {}) gives up: {}", run.id(), run.saga(),
                    dev.coop.render.TerminalText.escape(giveUp.message()));
            return transitions.startRollback(c, run, saga, null, Decisions.gaveUp(giveUp, transitions.source(run)),
                    null);
        }
        String unknown = unknownStep(run, saga);
        if (unknown != null) {
            park(c, run, unknown, "dev.coop.UnknownStep");
            return false;
        }
        if (run.failedChildren() > 0) {
            return handleChildFailures(c, run, saga, context);
        }
        if (run.stepIndex() == saga.steps().size()) {
            transitions.commit(c, run, List.of(LogEntry.of(EventType.COMMITTED, saga.steps().getLast().name())),
                    Advance.from(run).status(RunStatus.COMMITTED));
            return false;
        }
        return runStep(c, run, saga, context);
    }

    private <P> boolean runStep(Connection c, ClaimedRun run, Saga<P> saga, CooperationContext runContext)
            throws SQLException {
        Saga.Step<P> step = saga.steps().get(run.stepIndex());
        java.util.function.Supplier<P> payload;
        try {
            payload = transitions.stepPayload(run, saga);
        } catch (CoopValidationException e) {
            return transitions.startRollback(c, run, saga, step.name(), Failure.of(e, transitions.source(run)), null);
        }
        int iteration = run.history().executions(run.stepIndex()) + 1;
        if (step.isFinallyPart()) {
            return runFinallyPart(c, run, saga, step, payload.get(), runContext, iteration);
        }
        StepContextImpl<P> context = new StepContextImpl<>(run, step.name(), payload, engine, c,
                StepContextImpl.Kind.STEP, iteration, runContext, childSeqs(c, run, saga));
        context.retryPolicy = step.retryPolicy();
        if ("SKIP".equals(run.resolution())) {
            log.info("Run {} (saga {}): step '{}' marked done by an operator; not executing it", run.id(), run.saga(),
                    step.name());
            return commitInstance(c, run, saga, step.name(), context, run.stepIndex(), run.stepIndex() + 1, null,
                    null);
        }
        Flow[] flow = new Flow[1];
        Instant[] wake = new Instant[1];
        Throwable thrown = invoke(() -> {
            flow[0] = step.body().run(context);
            if (step.wakeAt() != null) {
                wake[0] = Limits.instant("The wake-up time of step '" + step.name() + "'",
                        step.wakeAt().at(context));
            }
        }, context);
        int next = -1;
        if (thrown == null) {
            try {
                next = nextStep(saga, run.stepIndex(), flow[0]);
            } catch (CoopValidationException e) {
                thrown = e;
            }
            if (flow[0] instanceof Flow.RepeatAfter after) { // periodic: from the start of this iteration
                wake[0] = later(wake[0], run.claimedAt().toInstant().plus(after.delay()));
            }
        }
        if (thrown != null) {
            return stepFailed(c, run, saga, step, step.name(), step.retryPolicy(), context, thrown);
        }
        return commitInstance(c, run, saga, step.name(), context, run.stepIndex(), next,
                wakeTime(wake[0], context), null);
    }

    /** The finally part of a step, on the happy path: runs unless it already ran in this run. */
    private <P> boolean runFinallyPart(Connection c, ClaimedRun run, Saga<P> saga, Saga.Step<P> part, P payload,
            CooperationContext runContext, int iteration) throws SQLException {
        Saga.Step<P> owner = saga.steps().get(part.finallyOf());
        StepContextImpl<P> context = new StepContextImpl<>(run, part.name(), payload, engine, c,
                StepContextImpl.Kind.FINALLY, iteration, runContext, new int[0]);
        if (!finallyDone(run, part.finallyOf())) {
            Throwable thrown = invoke(() -> owner.finallyBody().run(context), context);
            if (thrown != null) {
                return stepFailed(c, run, saga, part, part.name(), null, context, thrown);
            }
        } else {
            context.close();
        }
        return commitInstance(c, run, saga, part.name(), context, run.stepIndex(), run.stepIndex() + 1, null,
                part.finallyOf());
    }

    static boolean finallyDone(ClaimedRun run, int index) {
        return Arrays.stream(run.finallyDone()).anyMatch(i -> i == index);
    }

    /**
     * The instances whose children the next step's results come from: the latest step instance (a finally part in
     * between, which launches nothing, is passed over) and the child-failure handler runs that followed it. Walks
     * back over the newest instances the claim read, and reads further back only in the rare case they do not reach.
     */
    private int[] childSeqs(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
        List<Integer> seqs = new ArrayList<>();
        int[] recent = run.history().recent();
        for (int seq = run.stepsDone() - 1, i = 0; seq >= 0; seq--, i++) {
            if (i == recent.length) {
                recent = engine.store().instancesBefore(c, run.id(), seq + 1, 1_000);
                i = 0;
            }
            int instance = recent[i];
            if (instance >= 0 && instance < saga.steps().size() && saga.steps().get(instance).isFinallyPart()) {
                continue;
            }
            seqs.add(seq);
            if (instance >= 0) {
                break;
            }
        }
        return seqs.stream().mapToInt(Integer::intValue).toArray();
    }

    /** The index of the step to run after step {@code index} returned {@code flow}. */
    private static int nextStep(Saga<?> saga, int index, Flow flow) {
        return switch (flow == null ? Flow.CONTINUE : flow) {
            case Flow.Continue ignored -> index + 1;
            case Flow.Repeat ignored -> index;
            case Flow.RepeatAfter ignored -> index;
            case Flow.GoTo goTo -> {
                for (int i = 0; i < saga.steps().size(); i++) {
                    Saga.Step<?> candidate = saga.steps().get(i);
                    if (candidate.name().equals(goTo.step())) {
                        if (candidate.isFinallyPart()) {
                            throw new CoopValidationException("Step '" + saga.steps().get(index).name()
                                    + "' of saga '" + saga.name() + "' returned GoTo('" + goTo.step()
                                    + "'), which is a finally part; go to its step instead");
                        }
                        yield i;
                    }
                }
                throw new CoopValidationException("Step '" + saga.steps().get(index).name() + "' of saga '"
                        + saga.name() + "' returned GoTo('" + goTo.step() + "'), but the saga has no such step; "
                        + "its steps are " + saga.steps().stream().map(Saga.Step::name).toList());
            }
        };
    }

    private static Instant later(Instant a, Instant b) {
        return a == null || b.isAfter(a) ? b : a;
    }

    /** When the next step may start: the sleep's wake time, brought forward to the deadline so that it fires. */
    private static OffsetDateTime wakeTime(Instant wake, StepContextImpl<?> context) {
        if (wake == null) {
            return null;
        }
        Deadline deadline = context.deadline().orElse(null);
        Instant at = deadline != null && deadline.at().isBefore(wake) ? deadline.at() : wake;
        return at.atOffset(ZoneOffset.UTC);
    }

    /** The runs caused by the latest instance did not all commit: ask the step's handler, or roll back. */
    private <P> boolean handleChildFailures(Connection c, ClaimedRun run, Saga<P> saga, CooperationContext runContext)
            throws SQLException {
        int seq = run.stepsDone() - 1;
        int instance = run.history().recent()[0];
        int index = instance >= 0 ? instance : -1 - instance;
        Saga.Step<P> step = saga.steps().get(index);
        Failure failure = childFailure(c, run, step.name(), seq);
        if (step.childFailureHandler() == null) {
            return transitions.startRollback(c, run, saga, step.name(), failure, null);
        }
        P payload;
        try {
            payload = transitions.payload(run, saga);
        } catch (CoopValidationException e) {
            return transitions.startRollback(c, run, saga, step.name(), Failure.of(e, transitions.source(run)), null);
        }
        int handling = handling(c, run, index);
        // the iteration of the step's own instance (its latest execution), before the handler runs that followed it
        StepContextImpl<P> context = new StepContextImpl<>(run, step.name(), payload, engine, c,
                StepContextImpl.Kind.STEP, Math.max(1, run.history().executions(index)), runContext,
                childSeqs(c, run, saga));
        CooperationException exception = CooperationException.of(failure);
        Flow pending = pendingFlow(saga, index, run.stepIndex());
        Flow[] flow = new Flow[1];
        Throwable thrown = invoke(() -> flow[0] = step.childFailureHandler().handle(context, exception, handling,
                pending), context);
        int next = run.stepIndex();
        Instant wake = null;
        if (thrown == null && flow[0] != null) {
            try {
                next = nextStep(saga, index, flow[0]);
            } catch (CoopValidationException e) {
                thrown = e;
            }
            if (flow[0] instanceof Flow.RepeatAfter after) {
                wake = run.claimedAt().toInstant().plus(after.delay());
            }
        }
        if (thrown != null) {
            return stepFailed(c, run, saga, null, step.name(), null, context, thrown);
        }
        return commitInstance(c, run, saga, Transitions.instanceName(saga, -1 - index), context, -1 - index,
                next, wakeTime(wake, context), null);
    }

    /** The decision step {@code index} made, read back from the step it chose ({@code next}). */
    static Flow pendingFlow(Saga<?> saga, int index, int next) {
        if (next == index + 1 || next >= saga.steps().size()) {
            return Flow.next();
        }
        return next == index ? Flow.repeat() : Flow.goTo(saga.steps().get(next).name());
    }

    /**
     * Which handler run of step {@code index}'s latest instance comes next: 1 plus the handler runs since it. Walks
     * back over the newest instances the claim read, reading further back only when they are all handler runs.
     */
    private int handling(Connection c, ClaimedRun run, int index) throws SQLException {
        int n = 1;
        int[] recent = run.history().recent();
        for (int seq = run.stepsDone() - 1, i = 0; seq >= 0; seq--, i++) {
            if (i == recent.length) {
                recent = engine.store().instancesBefore(c, run.id(), seq + 1, 1_000);
                i = 0;
            }
            if (recent[i] != -1 - index) {
                break;
            }
            n++;
        }
        return n;
    }

    private Failure childFailure(Connection c, ClaimedRun run, String step, int seq) throws SQLException {
        List<Failure> causes = new ArrayList<>();
        boolean rollbackFailed = false;
        for (ChildFailure child : engine.store().childFailures(c, run.id(), seq)) {
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
            int instance, int nextStep, OffsetDateTime wakeAt, Integer finallyDone) throws SQLException {
        try {
            engine.store().attempts().ended(c, run, engine.engineId(), name); // after many attempts: the last one
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
            String contextJson = context.contextJson();
            if (!context.tasks.isEmpty()) {
                children += tasks.open(c, new ExternalTasks.Opener(run, run.stepsDone(), name,
                        engine.engineId(), contextJson, context.deadline()
                                .map(d -> d.at().atOffset(ZoneOffset.UTC)).orElse(null)),
                        context.tasks);
            }
            List<LogEntry> entries = new ArrayList<>(2);
            entries.add(new LogEntry(EventType.SUSPENDED, name, null, context.contextChanged() ? contextJson : null));
            String nextName = nextStep < saga.steps().size() ? saga.steps().get(nextStep).name() : null;
            String finalName = nextName == null ? saga.steps().getLast().name() : null;
            Advance advance = Advance.from(run).executed(instance, nextStep, nextName, finalName, children)
                    .context(contextJson).result(context.result());
            if (children > 0) {
                children = decisions.onWait(c, run, saga, context.context(), false, run.stepsDone(), children,
                        advance);
                advance.pending(children);
                context.tasks.stream().map(TaskRequest::timeoutAt).filter(java.util.Objects::nonNull)
                        .min(java.util.Comparator.naturalOrder()).ifPresent(at -> Decisions.wakeAt(advance, at));
            }
            if (children == 0) {
                advance.status(nextStep >= saga.steps().size() ? RunStatus.COMMITTED : RunStatus.RUNNABLE)
                        .runnableAt(wakeAt);
            }
            RunStatus status = advance.status();
            if (status == RunStatus.COMMITTED) {
                entries.add(LogEntry.of(EventType.COMMITTED, saga.steps().getLast().name()));
            }
            OffsetDateTime due = advance.runnableAt();
            if (finallyDone != null) {
                advance.finallyDone(finallyDone);
            }
            boolean delayed = due != null && due.isAfter(run.claimedAt());
            boolean runnable = transitions.commit(c, run, entries, advance, woken) == RunStatus.RUNNABLE;
            if (delayed && runnable) {
                engine.dispatcher().dueIn(java.time.Duration.between(run.claimedAt(), due).toMillis());
                return false;
            }
            return runnable;
        } catch (SQLException | RuntimeException e) {
            return writeFailed(c, run, saga, instance >= 0 ? saga.steps().get(instance) : null, name, e);
        }
    }

    /**
     * User code (a step or a child-failure handler) threw. Its writes are undone back to the savepoint taken before
     * it touched the connection, keeping the run's row lock, so no other engine can run it meanwhile. Then, in the
     * same transaction: database trouble is retried later, a cancellation makes the run give up, a retry policy may
     * schedule another attempt or park the run, and anything else rolls the run back.
     */
    private boolean stepFailed(Connection c, ClaimedRun run, Saga<?> saga, Saga.Step<?> stepDef, String step,
            RetryPolicy policy, StepContextImpl<?> context, Throwable thrown) throws SQLException {
        try {
            context.discardWrites();
        } catch (SQLException e) {
            if (Failures.endedTransaction(e)) {
                throw e; // see transactionEnded
            }
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
            Failure gaveUp = Failures.gaveUp(cancellation, transitions.source(run)).failure();
            engine.store().attempts().ended(c, run, engine.engineId(), step);
            return transitions.startRollbackAfterFinally(c, run, saga, step, gaveUp,
                    finallyBeforeRollback(c, run, saga, stepDef));
        }
        Failure failure = Failure.of(thrown, transitions.source(run));
        String json = failure.toJson();
        // a step refused for ending its transaction is wrong, not unlucky: trying it again would only refuse it again
        boolean retryable = policy != null && !(thrown instanceof CooperationException) && !context.refused();
        try {
            if (retryable && policy.shouldRetry(thrown, run.attempt())) {
                long delay = policy.delayAfter(run.attempt()).toMillis();
                log.info("Step '{}' of run {} (saga {}) failed on attempt {} ({}); retrying in {} ms", step, run.id(),
                        run.saga(), run.attempt(), Failures.describe(thrown), delay);
                engine.store().attempts().failed(c, run, engine.engineId(), step, run.attempt(), json);
                transitions.commit(c, run, List.of(),
                        Advance.from(run).attempt(run.attempt() + 1, delay, json).checkingCancellation());
                engine.dispatcher().dueIn(delay);
                return false;
            }
            if (retryable && policy.parksWhenExhausted()) {
                log.warn("Step '{}' of run {} (saga {}) failed on its last attempt {} ({}); parked for an operator",
                        step, run.id(), run.saga(), run.attempt(), Failures.describe(thrown));
                engine.store().attempts().parked(c, run, engine.engineId(), step, run.attempt(), json);
                transitions.commit(c, run, List.of(),
                        Advance.from(run).status(RunStatus.PARKED).failure(json).checkingCancellation());
                return false;
            }
        } catch (SQLException e) {
            return writeFailed(c, run, saga, stepDef, step, e); // cancelled meanwhile, or database trouble
        }
        log.info("Step '{}' of run {} (saga {}) failed: {}", step, run.id(), run.saga(), Failures.describe(thrown));
        engine.store().attempts().ended(c, run, engine.engineId(), step);
        return transitions.startRollbackAfterFinally(c, run, saga, step, failure,
                finallyBeforeRollback(c, run, saga, stepDef));
    }

    /**
     * A step failed and its run rolls back: when the step has a finally part that has not run, run it now, in the
     * failing transaction (the step's own writes are already undone). A failing finally part is logged and its
     * writes undone; it counts as run either way.
     *
     * @return the index of the step whose finally part ran (to record), or null
     */
    private <P> Transitions.FinallyRan finallyBeforeRollback(Connection c, ClaimedRun run, Saga<P> saga,
            Saga.Step<?> failed) throws SQLException {
        if (failed == null) {
            return null;
        }
        if (failed.isFinallyPart()) {
            return new Transitions.FinallyRan(failed.finallyOf(), null); // the finally part itself failed: it ran
        }
        int index = saga.steps().indexOf(failed);
        if (failed.finallyBody() == null || index < 0 || finallyDone(run, index)) {
            return null;
        }
        @SuppressWarnings("unchecked")
        Saga.Step<P> step = (Saga.Step<P>) failed;
        P payload;
        try {
            payload = transitions.payload(run, saga);
        } catch (CoopValidationException e) {
            payload = null;
        }
        StepContextImpl<P> context = new StepContextImpl<>(run, step.name() + LogNames.FINALLY_SUFFIX, payload,
                engine, c, StepContextImpl.Kind.FINALLY, run.history().executions(index) + 1,
                engine.json().readContext(run.context()), new int[0]);
        Throwable thrown = invoke(() -> step.finallyBody().run(context), context);
        if (thrown != null) {
            log.warn("Finally part of step '{}' of run {} (saga {}) failed: {}", step.name(), run.id(), run.saga(),
                    Failures.describe(thrown));
            context.discardWrites();
        }
        return new Transitions.FinallyRan(index, context);
    }

    /**
     * Writing a transition failed (database trouble, a cancellation detected at commit, or data the database
     * refused). The whole transaction is rolled back; the run is re-locked only if nobody moved it meanwhile.
     */
    private boolean writeFailed(Connection c, ClaimedRun run, Saga<?> saga, Saga.Step<?> stepDef, String step,
            Throwable thrown) throws SQLException {
        abortRoundFor(run, thrown, alone -> writeFailed(alone, run, saga, stepDef, step, thrown));
        Worker.rollbackQuietly(c);
        if (!Failures.isCancelled(thrown) && Failures.isBookkeepingTrouble(thrown)) {
            transitions.retryLater(c, run, step, thrown, false);
            return false;
        }
        ClaimedRun again = engine.store().reclaimUnchanged(c, run, engine.engineId());
        if (again == null) {
            c.commit(); // another engine took the run meanwhile and moved it on
            return false;
        }
        Failure failure = again.cancellation() != null
                ? Failures.gaveUp(again.cancellation(), transitions.source(run)).failure()
                : Failure.of(thrown, transitions.source(run));
        if (again.cancellation() == null) {
            log.info("Step '{}' of run {} (saga {}) could not be committed: {}", step, run.id(), run.saga(),
                    Failures.describe(thrown));
        }
        return transitions.startRollbackAfterFinally(c, again, saga, step, failure,
                finallyBeforeRollback(c, again, saga, stepDef));
    }

    private void park(Connection c, ClaimedRun run, String reason, String type) throws SQLException {
        log.warn("Run {} (saga {}) parked: {}", run.id(), run.saga(), dev.coop.render.TerminalText.escape(reason));
        Failure failure = new Failure(reason, type, transitions.source(run), List.of(), List.of());
        engine.store().attempts().parked(c, run, engine.engineId(), run.nextStep(), run.attempt(), failure.toJson());
        transitions.commit(c, run, List.of(),
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

    /**
     * Runs user code, turning anything it throws into a value; the context's connection is closed afterwards. While
     * it runs, the MDC names the run and step, and the engine's listeners are told of its start and end.
     */
    static Throwable invoke(UserCode code, StepContextImpl<?> context) {
        StepRound round = StepRound.current();
        if (round != null) { // the steps before it are written whole before user code uses the connection
            context.beforeFirstUse(round::firstUse);
        }
        StepLogContext.enter(context);
        Listeners listeners = context.listeners();
        Object[] states = listeners.isEmpty() ? null : listeners.stepStarted(context, context.part());
        long start = states == null ? 0 : System.nanoTime();
        Throwable thrown = null;
        NetworkTimeouts.forUserCode(context.rawConnection()); // a slow statement of the user's is not Coop's to end
        try {
            StepTransactionHook hook = listeners.transactionHook();
            if (hook == null) {
                code.run();
            } else {
                inTransaction(hook, code, context);
            }
        } catch (Throwable t) {
            thrown = t;
        }
        NetworkTimeouts.forCoop(context.rawConnection());
        try {
            thrown = context.withRefusal(thrown); // a refused statement fails the part, even when it was caught
        } finally {
            if (states != null) {
                listeners.stepEnded(context, context.part(), states, context.outcome(thrown),
                        System.nanoTime() - start, thrown);
            }
            StepLogContext.leave();
            context.close();
            if (Thread.interrupted()) {
                log.debug("Step code of run {} left its thread interrupted; cleared", context.runId());
            }
        }
        if (round != null) {
            round.checkBroken(); // the deferred advances could not be sent: not this step's failure
        }
        return thrown;
    }

    /** Runs user code between the hook's begin and end: a framework's transaction on the step's connection. */
    private static void inTransaction(StepTransactionHook hook, UserCode code, StepContextImpl<?> context)
            throws Exception {
        Object transaction = hook.begin(context);
        try {
            code.run();
        } catch (Throwable t) {
            try {
                hook.end(transaction, t);
            } catch (Throwable e) {
                t.addSuppressed(e);
            }
            throw t;
        }
        hook.end(transaction, null);
    }

    @FunctionalInterface
    interface UserCode {
        void run() throws Exception;
    }
}
