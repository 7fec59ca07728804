package dev.coop.internal.read;

import dev.coop.inspect.CollapsedRuns;
import dev.coop.inspect.Event;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The runs read and, for collapsed runs, their children's counts; which of their sagas' steps have a compensation to
 * show.
 */
record LoadedTree(List<TreeRow> rows, Map<UUID, List<CollapsedRuns>> collapsed,
        Map<UUID, Map<Integer, Integer>> launchedBySeq, List<Event> events, CompensatingSteps compensating) {
}
