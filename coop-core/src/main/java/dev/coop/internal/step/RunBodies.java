package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.step.CommitInstance.Instance;
import dev.coop.internal.store.ChildFailure;
import dev.coop.internal.store.InputLimits;

import dev.coop.failure.ChildRollbackFailedException;
import dev.coop.failure.ChildRolledBackException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.CoopValidationException;
import dev.coop.CooperationContext;
import dev.coop.Deadline;
import dev.coop.failure.Failure;
import dev.coop.Flow;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The run-bodies stage of a claimed run on the happy path: runs its next step (or finally part), or the handler of
 * its step's failed children, and decides from what the body returned which step comes next and when. A body that
 * succeeded goes on to {@link CommitInstance}; one that threw to {@link StepRecovery}.
 */
final class RunBodies {
    private static final Logger log = LoggerFactory.getLogger(RunBodies.class);

    private final EngineContext engine;
    private final Rollbacks rollbacks;
    private final Payloads payloads;
    private final StepRecovery failures;
    private final CommitInstance commit;

    RunBodies(EngineContext engine, StepPath path, StepRecovery failures, CommitInstance commit) {
        this.engine = engine;
        this.rollbacks = path.rollbacks();
        this.payloads = path.payloads();
        this.failures = failures;
        this.commit = commit;
    }

    /** What a body returned, or what it threw. */
    private record Outcome(Flow flow, Throwable thrown) {
    }

    /** Runs the run's next step (or finally part) and moves the run on. */
    <P> StepEnd runStep(Connection c, ClaimedRun run, Saga<P> saga, CooperationContext runContext)
            throws SQLException {
        Saga.Step<P> step = saga.steps().get(run.stepIndex());
        java.util.function.Supplier<P> payload;
        try {
            payload = payloads.stepPayload(run, saga);
        } catch (CoopValidationException e) {
            return rollbacks.start(c, run, saga, step.name(), Failure.of(e, engine.source(run)), null);
        }
        int iteration = run.history().executions(run.stepIndex()) + 1;
        if (step.isFinallyPart()) {
            return runFinallyPart(c, run, saga, step, new StepContextImpl<>(run, step.name(), payload.get(), engine, c,
                    StepContextImpl.Kind.FINALLY, iteration, runContext, new int[0]));
        }
        StepContextImpl<P> context = new StepContextImpl<>(run, step.name(), payload, engine, c,
                StepContextImpl.Kind.STEP, iteration, runContext, childSeqs(c, run, saga));
        context.retryPolicy = step.retryPolicy();
        context.timeout = saga.timeoutOf(step.name()).orElse(null);
        context.splittable = true;
        Part part = new Part(run, saga, step, step.name());
        if ("SKIP".equals(run.resolution())) {
            log.info("Run {} (saga {}): step '{}' marked done by an operator; not executing it", run.id(), run.saga(),
                    step.name());
            return commit.commit(c, new Instance(part, context, run.stepIndex(), run.stepIndex() + 1, null, null));
        }
        Flow[] flow = new Flow[1];
        Instant[] wake = new Instant[1];
        Throwable thrown = InvokeUserCode.invoke(() -> {
            flow[0] = step.body().run(context);
            if (step.wakeAt() != null) {
                wake[0] = InputLimits.instant("The wake-up time of step '" + step.name() + "'",
                        step.wakeAt().at(context));
            }
        }, context);
        if (context.lost) { // it left its round, and another transaction holds its run now
            return StepEnd.STOP;
        }
        if (context.reclaimed != null) { // it left its round: its run is locked by a transaction of its own
            part = new Part(context.reclaimed, saga, step, step.name());
        }
        return stepRan(c, part, context, new Outcome(flow[0], thrown), wake[0]);
    }

    /** After a step's body: the step it chose and when, committed; or the failure. */
    private StepEnd stepRan(Connection c, Part part, StepContextImpl<?> context, Outcome outcome, Instant wakeAt)
            throws SQLException {
        ClaimedRun run = part.run();
        Throwable thrown = outcome.thrown();
        Instant wake = wakeAt;
        int next = -1;
        if (thrown == null) {
            try {
                next = nextStep(part.saga(), run.stepIndex(), outcome.flow());
            } catch (CoopValidationException e) {
                thrown = e;
            }
            if (outcome.flow() instanceof Flow.RepeatAfter after) { // periodic: from the start of this iteration
                wake = later(wake, run.claimedAt().toInstant().plus(after.delay()));
            }
        }
        if (thrown != null) {
            return failures.stepFailed(c, part, context, thrown);
        }
        return commit.commit(c, new Instance(part, context, run.stepIndex(), next, wakeTime(wake, context), null));
    }

    /** The finally part of a step, on the happy path: runs unless it already ran in this run. */
    private <P> StepEnd runFinallyPart(Connection c, ClaimedRun run, Saga<P> saga, Saga.Step<P> part,
            StepContextImpl<P> context) throws SQLException {
        Saga.Step<P> owner = saga.steps().get(part.finallyOf());
        Part done = new Part(run, saga, part, part.name());
        if (!finallyDone(run, part.finallyOf())) {
            Throwable thrown = InvokeUserCode.invoke(() -> owner.finallyBody().run(context), context);
            if (thrown != null) {
                return failures.stepFailed(c, done, context, thrown);
            }
        } else {
            context.close();
        }
        return commit.commit(c, new Instance(done, context, run.stepIndex(), run.stepIndex() + 1, null,
                part.finallyOf()));
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
    <P> StepEnd handleChildFailures(Connection c, ClaimedRun run, Saga<P> saga, CooperationContext runContext)
            throws SQLException {
        int seq = run.stepsDone() - 1;
        int instance = run.history().recent()[0];
        int index = instance >= 0 ? instance : -1 - instance;
        Saga.Step<P> step = saga.steps().get(index);
        Failure failure = childFailure(c, run, step.name(), seq);
        if (step.childFailureHandler() == null) {
            return rollbacks.start(c, run, saga, step.name(), failure, null);
        }
        P payload;
        try {
            payload = payloads.payload(run, saga);
        } catch (CoopValidationException e) {
            return rollbacks.start(c, run, saga, step.name(), Failure.of(e, engine.source(run)), null);
        }
        int handling = handling(c, run, index);
        // the iteration of the step's own instance (its latest execution), before the handler runs that followed it
        StepContextImpl<P> context = new StepContextImpl<>(run, step.name(), payload, engine, c,
                StepContextImpl.Kind.STEP, Math.max(1, run.history().executions(index)), runContext,
                childSeqs(c, run, saga));
        CooperationException exception = CooperationException.of(failure);
        Flow pending = pendingFlow(saga, index, run.stepIndex());
        Flow[] flow = new Flow[1];
        Throwable thrown = InvokeUserCode.invoke(() -> flow[0] = step.childFailureHandler().handle(context, exception,
                handling, pending), context);
        return handlerRan(c, new Part(run, saga, null, step.name()), index, context, new Outcome(flow[0], thrown));
    }

    /** After the child-failure handler of step {@code index}: the step it chose and when, committed; or the failure. */
    private StepEnd handlerRan(Connection c, Part part, int index, StepContextImpl<?> context, Outcome outcome)
            throws SQLException {
        ClaimedRun run = part.run();
        Throwable thrown = outcome.thrown();
        int next = run.stepIndex();
        Instant wake = null;
        if (thrown == null && outcome.flow() != null) {
            try {
                next = nextStep(part.saga(), index, outcome.flow());
            } catch (CoopValidationException e) {
                thrown = e;
            }
            if (outcome.flow() instanceof Flow.RepeatAfter after) {
                wake = run.claimedAt().toInstant().plus(after.delay());
            }
        }
        if (thrown != null) {
            return failures.stepFailed(c, part, context, thrown);
        }
        Part handler = new Part(run, part.saga(), null, InstanceNames.instanceName(part.saga(), -1 - index));
        return commit.commit(c, new Instance(handler, context, -1 - index, next, wakeTime(wake, context), null));
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
        return new Failure(message, type, engine.source(run), List.of(), causes);
    }
}
