package dev.coop;

import dev.coop.internal.saga.SagaRules;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The steps a {@link Saga.Builder} has collected, and the options it gave them. Each option applies to the step added
 * last; after {@code andFinally}, that is still the step the finally part belongs to, not the step that runs the
 * finally part. Each change is checked by the saga's {@link SagaRules} first, in the order the builder always checked
 * them.
 */
final class SagaSteps<P> {
    private final SagaRules rules;
    private final List<Saga.Step<P>> steps = new ArrayList<>();
    private final Set<String> names = new HashSet<>();
    /** The steps' own timeouts, by step name. */
    private final Map<String, Duration> timeouts = new HashMap<>();

    SagaSteps(SagaRules rules) {
        this.rules = rules;
    }

    /**
     * Adds a step: a sleep when {@code wakeAt} is set, the happy path's run of the finally part of step
     * {@code finallyOf} when that is 0 or more.
     */
    void add(String stepName, FlowBody<P> body, Saga.WakeTime<P> wakeAt, int finallyOf) {
        rules.stepName(stepName, finallyOf >= 0);
        rules.uniqueStep(stepName, names.add(stepName));
        steps.add(new Saga.Step<>(stepName, body, null, null, null, null, wakeAt, finallyOf));
    }

    /** Gives the step added last its finally part, and adds the step that runs it on the happy path. */
    void finallyPart(StepBody<P> finallyBody) {
        Saga.Step<P> s = last("andFinally");
        rules.finallyPart(s.name(), s.finallyBody() == null && !s.isFinallyPart() && s.wakeAt() == null,
                s.finallyBody() != null);
        int index = lastIndex();
        replaceLast(s.with(s.compensation(), s.childFailureHandler(), s.retryPolicy(), finallyBody));
        add(s.name() + dev.coop.internal.store.LogNames.FINALLY_SUFFIX, step -> Flow.CONTINUE, null, index);
    }

    void compensation(Compensation<P> compensation) {
        Saga.Step<P> s = last("compensateWith");
        rules.stepOption(s.name(), s.compensation(), "a compensation");
        replaceLast(s.with(compensation, s.childFailureHandler(), s.retryPolicy(), s.finallyBody()));
    }

    void childFailureHandler(ChildFailureFlow<P> handler) {
        Saga.Step<P> s = last("onChildFailure");
        rules.stepOption(s.name(), s.childFailureHandler(), "a child failure handler");
        replaceLast(s.with(s.compensation(), handler, s.retryPolicy(), s.finallyBody()));
    }

    void retryPolicy(RetryPolicy policy) {
        Saga.Step<P> s = last("retry");
        rules.stepOption(s.name(), s.retryPolicy(), "a retry policy");
        replaceLast(s.with(s.compensation(), s.childFailureHandler(), policy, s.finallyBody()));
    }

    void timeout(Duration timeout) {
        Saga.Step<P> s = last("timeout");
        timeouts.put(s.name(), rules.stepTimeout(s.name(), s.wakeAt() != null, timeouts.get(s.name()), timeout));
    }

    boolean isEmpty() {
        return steps.isEmpty();
    }

    /** The steps, in order (a copy). */
    List<Saga.Step<P>> list() {
        return List.copyOf(steps);
    }

    /** The steps' own timeouts, by step name (a copy). */
    Map<String, Duration> timeouts() {
        return Map.copyOf(timeouts);
    }

    /** The step the next option applies to; {@code method} names the builder's call when there is none yet. */
    private Saga.Step<P> last(String method) {
        if (steps.isEmpty()) {
            throw rules.noStepYet(method);
        }
        return steps.get(lastIndex());
    }

    /** The step added last; after a finally part, the step the finally part belongs to. */
    private int lastIndex() {
        Saga.Step<P> last = steps.getLast();
        return last.isFinallyPart() ? last.finallyOf() : steps.size() - 1;
    }

    private void replaceLast(Saga.Step<P> step) {
        steps.set(lastIndex(), step);
    }
}
