package dev.coop.internal.read;

import dev.coop.Lineage;
import dev.coop.failure.Failure;
import dev.coop.inspect.CollapsedRuns;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/** Builds the views of a tree from the runs and events read: each run with its steps and the runs it caused. */
final class TreeAssembly {
    private TreeAssembly() {
    }

    /** The views of the tree's top runs, each with its steps and, recursively, the runs it caused. */
    static List<RunView> assemble(LoadedTree read, Map<UUID, String> waitingFor,
            Map<UUID, RunningSteps.Live> running) {
        return assemble(read, waitingFor, running, Map.of());
    }

    /** The same, with the stories of the tree's external tasks, by their runs. */
    static List<RunView> assemble(LoadedTree read, Map<UUID, String> waitingFor,
            Map<UUID, RunningSteps.Live> running, Map<UUID, dev.coop.inspect.TaskSummary> tasks) {
        List<TreeRow> rows = read.rows();
        Map<UUID, List<Event>> byRun = byRun(read.events());
        Map<UUID, List<TreeRow>> children = new LinkedHashMap<>();
        List<TreeRow> roots = new ArrayList<>();
        Set<UUID> ids = new HashSet<>();
        rows.forEach(r -> ids.add(r.id()));
        for (TreeRow r : rows) {
            if (r.parent() != null && ids.contains(r.parent())) {
                children.computeIfAbsent(r.parent(), k -> new ArrayList<>()).add(r);
            } else {
                roots.add(r);
            }
        }
        // children before parents, without recursion: a hierarchy may be thousands of levels deep
        Map<UUID, RunView> built = new HashMap<>();
        ArrayDeque<Object[]> stack = new ArrayDeque<>();
        roots.forEach(r -> stack.push(new Object[]{r, false}));
        while (!stack.isEmpty()) {
            Object[] top = stack.pop();
            TreeRow r = (TreeRow) top[0];
            List<TreeRow> kids = children.getOrDefault(r.id(), List.of());
            if (!(Boolean) top[1]) {
                stack.push(new Object[]{r, true});
                kids.forEach(k -> stack.push(new Object[]{k, false}));
            } else {
                built.put(r.id(), view(r, byRun, kids.stream().map(k -> built.get(k.id())).toList(),
                        read.collapsed().getOrDefault(r.id(), List.of()), read.launchedBySeq(),
                        waitingFor.get(r.id()), running.get(r.id()), tasks.get(r.id()), read.compensating()));
            }
        }
        return roots.stream().map(r -> built.get(r.id())).toList();
    }

    /** Each run's own events (and the cancellations of its scope), by run. */
    private static Map<UUID, List<Event>> byRun(List<Event> events) {
        Map<UUID, List<Event>> byRun = new HashMap<>();
        for (Event e : events) {
            if (e.saga() != null || e.type() == EventType.CANCELLATION_REQUESTED) {
                byRun.computeIfAbsent(e.lineage().last(), k -> new ArrayList<>()).add(e);
            }
        }
        return byRun;
    }

    private static RunView view(TreeRow r, Map<UUID, List<Event>> byRun, List<RunView> kids,
            List<CollapsedRuns> collapsed, Map<UUID, Map<Integer, Integer>> launchedBySeq, String waitingFor,
            RunningSteps.Live live, dev.coop.inspect.TaskSummary task, CompensatingSteps compensating) {
        List<StepView> steps = counted(StepViews.steps(byRun.getOrDefault(r.id(), List.of())),
                launchedBySeq.get(r.id())).stream()
                .filter(s -> compensating.shows(r.saga(), r.sagaVersion(), s)) // none declared: no row
                .toList();
        return new RunView(r.id(), r.message(), r.topic(), r.saga(), new Lineage(Arrays.asList(r.lineage())),
                r.status(), r.rollingBack(), r.created(), r.started(), r.finished(),
                r.failure() == null ? null : Failure.fromJson(r.failure()), steps,
                kids, collapsed, r.sagaVersion(), live == null ? waitingFor : null, r.ordering(),
                live == null ? null : live.view(steps), task);
    }

    /**
     * The steps of a run whose children were counted, with how many messages each instance launched: the n-th
     * committed step or handler transaction is instance n ({@code parent_seq} of the runs it caused).
     */
    private static List<StepView> counted(List<StepView> steps, Map<Integer, Integer> bySeq) {
        if (bySeq == null) {
            return steps;
        }
        List<StepView> counted = new ArrayList<>(steps.size());
        int seq = 0;
        for (StepView s : steps) {
            boolean instance = s.failure() == null
                    && (s.kind() == StepView.Kind.STEP || s.kind() == StepView.Kind.CHILD_FAILURE_HANDLER);
            int n = instance ? bySeq.getOrDefault(seq++, 0) : 0;
            counted.add(n <= s.launched().size()
                    ? s
                    : new StepView(s.name(), s.kind(), s.engine(), s.startedAt(),
                            s.endedAt(), s.launched(), s.failure(), s.iteration(), n, s.attempt()));
        }
        return counted;
    }
}
