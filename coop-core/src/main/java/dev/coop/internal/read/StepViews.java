package dev.coop.internal.read;

import dev.coop.MessageId;
import dev.coop.failure.Failure;
import dev.coop.inspect.Event;
import dev.coop.inspect.StepView;
import dev.coop.internal.store.LogNames;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A run's transactions as steps, from its own events in log order, with the iterations of steps run again. */
final class StepViews {
    private StepViews() {
    }

    /** The run's transactions, from its own events in log order. */
    static List<StepView> steps(List<Event> events) {
        List<StepView> steps = new ArrayList<>();
        Map<String, List<MessageId>> launched = new HashMap<>();
        for (Event e : events) {
            switch (e.type()) {
                case EMITTED, ROLLBACK_EMITTED -> launched.computeIfAbsent(e.step(), k -> new ArrayList<>())
                        .add(e.messageId());
                case SUSPENDED -> steps.add(step(e, launched.remove(e.step()), null));
                case ATTEMPT_FAILED, PARKED, RETRIED, MARKED_DONE -> steps.add(attemptStep(e));
                case ROLLING_BACK, ROLLBACK_FAILED -> {
                    if (e.step() != null) {
                        steps.add(step(e, launched.remove(e.step()),
                                e.exception() == null ? null : Failure.fromJson(e.exception())));
                    }
                }
                default -> {
                }
            }
        }
        return numbered(steps);
    }

    /**
     * Numbers the executions of steps run more than once (loops): the n-th execution of a step is iteration n; the
     * rollback transactions of a step undo its iterations newest first.
     */
    private static List<StepView> numbered(List<StepView> steps) {
        Map<String, Integer> executed = new HashMap<>();
        for (StepView s : steps) {
            if (s.kind() == StepView.Kind.STEP && s.failure() == null) {
                executed.merge(s.name(), 1, Integer::sum);
            }
        }
        if (executed.values().stream().allMatch(n -> n == 1)) {
            return steps;
        }
        Map<String, Integer> seen = new HashMap<>();
        Map<String, Integer> undone = new HashMap<>();
        List<StepView> numbered = new ArrayList<>(steps.size());
        for (StepView s : steps) {
            int iteration = switch (s.kind()) {
                case STEP, CHILD_FAILURE_HANDLER -> s.kind() == StepView.Kind.STEP
                        ? seen.merge(s.name(), 1, Integer::sum)
                        : Math.max(1, seen.getOrDefault(s.name().replace(LogNames.HANDLER_SUFFIX, ""), 1));
                case ROLLBACK_CHILDREN -> executed.getOrDefault(undoneStep(s.name(), LogNames.CHILDREN_SUFFIX), 1)
                        - undone.getOrDefault(undoneStep(s.name(), LogNames.CHILDREN_SUFFIX), 0);
                case COMPENSATION -> {
                    String step = undoneStep(s.name(), "");
                    int n = executed.getOrDefault(step, 1) - undone.getOrDefault(step, 0);
                    undone.merge(step, 1, Integer::sum);
                    yield n;
                }
                case ATTEMPT_FAILED, PARKED, RETRIED, MARKED_DONE -> 1;
            };
            numbered.add(new StepView(s.name(), s.kind(), s.engine(), s.startedAt(), s.endedAt(), s.launched(),
                    s.failure(), Math.max(1, iteration), s.launchedCount(), s.attempt()));
        }
        return numbered;
    }

    private static String undoneStep(String name, String suffix) {
        String s = name.startsWith(LogNames.ROLLBACK_PREFIX) ? name.substring(LogNames.ROLLBACK_PREFIX.length()) : name;
        return !suffix.isEmpty() && s.endsWith(suffix) ? s.substring(0, s.length() - suffix.length()) : s;
    }

    /** A failed attempt, a parking, or an operator's answer to it, under the step it is about. */
    private static StepView attemptStep(Event e) {
        StepView.Kind kind = StepView.Kind.valueOf(e.type().name());
        return new StepView(e.step() == null ? "?" : e.step(), kind, e.engine(), e.startedAt(), e.createdAt(),
                List.of(), e.exception() == null ? null : Failure.fromJson(e.exception()), 1, 0,
                e.attempt() == null ? 0 : e.attempt());
    }

    private static StepView step(Event e, List<MessageId> launched, Failure failure) {
        return new StepView(e.step(), kindOf(e.step()), e.engine(), e.startedAt(), e.createdAt(),
                launched == null ? List.of() : List.copyOf(launched), failure);
    }

    static StepView.Kind kindOf(String name) {
        if (name.startsWith(LogNames.ROLLBACK_PREFIX)) {
            return name.endsWith(LogNames.CHILDREN_SUFFIX)
                    ? StepView.Kind.ROLLBACK_CHILDREN
                    : StepView.Kind.COMPENSATION;
        }
        return name.endsWith(LogNames.HANDLER_SUFFIX) ? StepView.Kind.CHILD_FAILURE_HANDLER : StepView.Kind.STEP;
    }
}
