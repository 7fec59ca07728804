package dev.coop;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A saga: a named handler of one topic, made of ordered steps. Each run of a saga handles one message; a step starts
 * only after every run caused by the previous step finished. Build one with {@link #on(Topic, String)}.
 */
public final class Saga<P> {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}");
    private static final int MAX_STEP_NAME = 200;

    private final Topic<P> topic;
    private final String name;
    private final List<Step<P>> steps;

    private Saga(Topic<P> topic, String name, List<Step<P>> steps) {
        this.topic = topic;
        this.name = name;
        this.steps = List.copyOf(steps);
    }

    /** Starts a saga named {@code name} that handles every message on {@code topic}. */
    public static <P> Builder<P> on(Topic<P> topic, String name) {
        Objects.requireNonNull(topic, "topic");
        if (name == null) {
            throw new CoopValidationException("Saga name is missing (null)");
        }
        if (!NAME.matcher(name).matches()) {
            throw new CoopValidationException("Invalid saga name '" + name
                    + "': use 1 to 200 letters, digits or . _ - : / and start with a letter or digit");
        }
        return new Builder<>(topic, name);
    }

    public Topic<P> topic() {
        return topic;
    }

    public String name() {
        return name;
    }

    /** The steps, in order. */
    public List<Step<P>> steps() {
        return steps;
    }

    @Override
    public String toString() {
        return "Saga[" + name + " on " + topic.name() + ", " + steps.size() + " steps]";
    }

    /**
     * One step of a saga: its name, its code, and optionally how it is compensated, how it handles failures of the
     * runs it caused, and how it retries its own failures.
     */
    public record Step<P>(String name, StepBody<P> body, Compensation<P> compensation,
            ChildFailureHandler<P> childFailureHandler, RetryPolicy retryPolicy) {
    }

    /** Collects the steps of a saga; each call validates its input at once. */
    public static final class Builder<P> {
        private final Topic<P> topic;
        private final String name;
        private final List<Step<P>> steps = new ArrayList<>();
        private final Set<String> stepNames = new HashSet<>();

        private Builder(Topic<P> topic, String name) {
            this.topic = topic;
            this.name = name;
        }

        /** Adds a step. Step names are unique within the saga and recorded in the event log. */
        public Builder<P> step(String stepName, StepBody<P> body) {
            Objects.requireNonNull(body, "body of step '" + stepName + "'");
            if (stepName == null || stepName.isBlank() || stepName.length() > MAX_STEP_NAME
                    || stepName.chars().anyMatch(Character::isISOControl)) {
                throw new CoopValidationException("Invalid step name '" + stepName + "' in saga '" + name
                        + "': use 1 to " + MAX_STEP_NAME + " printable characters");
            }
            if (stepName.startsWith(dev.coop.internal.LogNames.ROLLBACK_PREFIX)
                    || stepName.endsWith(dev.coop.internal.LogNames.HANDLER_SUFFIX)) {
                throw new CoopValidationException("Step name '" + stepName + "' in saga '" + name
                        + "' imitates the names Coop logs for rollbacks and child-failure handlers; choose another");
            }
            if (!stepNames.add(stepName)) {
                throw new CoopValidationException(
                        "Saga '" + name + "' already has a step named '" + stepName + "'");
            }
            steps.add(new Step<>(stepName, body, null, null, null));
            return this;
        }

        /** Sets how the step added last is undone when the run rolls back (default: nothing to undo). */
        public Builder<P> compensateWith(Compensation<P> compensation) {
            Objects.requireNonNull(compensation, "compensation");
            Step<P> s = last("compensateWith");
            if (s.compensation() != null) {
                throw new CoopValidationException("Step '" + s.name() + "' of saga '" + name
                        + "' already has a compensation");
            }
            return replaceLast(new Step<>(s.name(), s.body(), compensation, s.childFailureHandler(), s.retryPolicy()));
        }

        /** Sets what the step added last does when runs it caused fail (default: roll back this run too). */
        public Builder<P> onChildFailure(ChildFailureHandler<P> handler) {
            Objects.requireNonNull(handler, "handler");
            Step<P> s = last("onChildFailure");
            if (s.childFailureHandler() != null) {
                throw new CoopValidationException("Step '" + s.name() + "' of saga '" + name
                        + "' already has a child failure handler");
            }
            return replaceLast(new Step<>(s.name(), s.body(), s.compensation(), handler, s.retryPolicy()));
        }

        /** Sets how the step added last retries its own failures (default: no retry, the run rolls back). */
        public Builder<P> retry(RetryPolicy policy) {
            Objects.requireNonNull(policy, "policy");
            Step<P> s = last("retry");
            if (s.retryPolicy() != null) {
                throw new CoopValidationException("Step '" + s.name() + "' of saga '" + name
                        + "' already has a retry policy");
            }
            return replaceLast(new Step<>(s.name(), s.body(), s.compensation(), s.childFailureHandler(), policy));
        }

        private Step<P> last(String method) {
            if (steps.isEmpty()) {
                throw new CoopValidationException(method + "() applies to the step added last, but saga '" + name
                        + "' has no step yet");
            }
            return steps.getLast();
        }

        private Builder<P> replaceLast(Step<P> step) {
            steps.set(steps.size() - 1, step);
            return this;
        }

        public Saga<P> build() {
            if (steps.isEmpty()) {
                throw new CoopValidationException(
                        "Saga '" + name + "' has no steps; add at least one with step()");
            }
            return new Saga<>(topic, name, steps);
        }
    }
}
