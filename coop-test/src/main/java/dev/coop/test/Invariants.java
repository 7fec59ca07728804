package dev.coop.test;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.MessageId;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Checks the rules of structured cooperation over an event log, typically every event of a test's database (see
 * {@link CoopTables#allEvents()}) or the log of one hierarchy ({@code CoopClient.events}). Each check throws an
 * {@link AssertionError} listing every violation with the events involved.
 *
 * <p>
 * How runs are read from the log: a run is identified by its lineage (its last element is the run's id); its events
 * are the SEEN, SUSPENDED, COMMITTED, ROLLING_BACK, ROLLED_BACK and ROLLBACK_FAILED rows with that lineage. A step
 * launched a message in its scope when an EMITTED row carries the run's lineage and the step's name and was written
 * in the step's transaction (after the run's previous SUSPENDED, before the step's own). A message launched on the
 * global scope has a lineage of one element and is nobody's child.
 *
 * <p>
 * The barrier check assumes every child is awaited, as under the standard strategy; a strategy that stops waiting for
 * children that did not start in time ({@code Strategies.timeWindow}) lets a parent go on before those finish.
 */
public final class Invariants {
    private static final Set<EventType> RUN_EVENTS = EnumSet.of(EventType.SEEN, EventType.SUSPENDED,
            EventType.COMMITTED, EventType.ROLLING_BACK, EventType.ROLLED_BACK, EventType.ROLLBACK_FAILED);
    private static final Set<EventType> TERMINAL = EnumSet.of(EventType.COMMITTED, EventType.ROLLED_BACK,
            EventType.ROLLBACK_FAILED);
    /** Events that end the waiting of a run after a step: its next step, its commit, or its failure. */
    private static final Set<EventType> RESUMED = EnumSet.of(EventType.SUSPENDED, EventType.COMMITTED,
            EventType.ROLLING_BACK, EventType.ROLLED_BACK, EventType.ROLLBACK_FAILED);
    private static final int MAX_REPORTED = 20;

    private Invariants() {
    }

    /** Runs {@link #assertRunsWellFormed(List)} and {@link #assertStepBarrier(List)}. */
    public static void assertAll(List<Event> events) {
        assertRunsWellFormed(events);
        assertStepBarrier(events);
    }

    /**
     * The rule of structured cooperation: after a step of a run launched messages in its scope, the run wrote nothing
     * more (no next step, no COMMITTED, no failure) before every run of those messages had finished (written its
     * COMMITTED, ROLLED_BACK or ROLLBACK_FAILED). Also checks that no such child run started (SEEN) before the step
     * that launched it committed (except an external task that a kept signal completed as it was opened: the step's
     * own transaction writes its SEEN and COMMITTED). Since each run waits for its own children, this holds
     * transitively for grandchildren.
     *
     * <p>
     * Runs that have not moved on yet are not checked. The log does not show runs that were created but never
     * started; pair this check with the run statuses to catch those.
     */
    public static void assertStepBarrier(List<Event> events) {
        Log log = new Log(events);
        List<String> violations = new ArrayList<>();
        for (Map.Entry<List<UUID>, List<Event>> run : log.runs.entrySet()) {
            List<UUID> lineage = run.getKey();
            List<Event> own = run.getValue();
            long previousStepEnd = 0;
            for (int i = 0; i < own.size(); i++) {
                Event suspended = own.get(i);
                if (suspended.type() != EventType.SUSPENDED) {
                    continue;
                }
                long from = previousStepEnd;
                previousStepEnd = suspended.id();
                Set<MessageId> launched = new java.util.HashSet<>();
                for (Event e : log.emittedBy.getOrDefault(lineage, List.of())) {
                    if (e.id() > from && e.id() < suspended.id() && e.step() != null
                            && e.step().equals(suspended.step())) {
                        launched.add(e.messageId());
                    }
                }
                if (launched.isEmpty()) {
                    continue;
                }
                Event resumed = null;
                for (int j = i + 1; j < own.size() && resumed == null; j++) {
                    if (RESUMED.contains(own.get(j).type())) {
                        resumed = own.get(j);
                    }
                }
                for (List<UUID> childLineage : log.children.getOrDefault(lineage, List.of())) {
                    List<Event> child = log.runs.get(childLineage);
                    if (!launched.contains(child.getFirst().messageId())) {
                        continue;
                    }
                    Event first = child.getFirst();
                    if (first.id() < suspended.id() && !settledByItsOpener(child, suspended)) {
                        violations.add("child run " + EventLog.shortLineage(childLineage) + " wrote event #"
                                + first.id() + " before the step '" + suspended.step() + "' that launched it committed"
                                + " (#" + suspended.id() + ")");
                    }
                    if (resumed == null) {
                        continue;
                    }
                    Event terminal = child.stream().filter(e -> TERMINAL.contains(e.type())).findFirst()
                            .orElse(null);
                    if (terminal == null || terminal.id() > resumed.id()) {
                        violations.add("run " + EventLog.shortLineage(lineage) + " of saga " + suspended.saga()
                                + " wrote " + EventLog.row(resumed) + " (#" + resumed.id() + ") after step '"
                                + suspended.step() + "' but its child run " + EventLog.shortLineage(childLineage)
                                + " of saga " + first.saga() + (terminal == null
                                        ? " never finished"
                                        : " finished only at #" + terminal.id() + " (" + terminal.type() + ")"));
                    }
                }
            }
        }
        fail("step barrier", violations, events);
    }

    /**
     * Whether {@code child} is an external task that a kept signal completed when its opener's step opened it: its
     * SEEN and COMMITTED are written by the opening step's own transaction, before that step's SUSPENDED, so they
     * committed with the step, not before it.
     */
    private static boolean settledByItsOpener(List<Event> child, Event suspended) {
        return child.size() == 2 && dev.coop.ExternalTask.SAGA.equals(child.get(0).saga())
                && child.get(0).type() == EventType.SEEN && child.get(1).type() == EventType.COMMITTED
                && child.get(1).id() < suspended.id();
    }

    /**
     * The shape of every run in the log: its first event is SEEN and it has exactly one (except a run settled before
     * it started: a ROLLING_BACK and a ROLLED_BACK, nothing else); the message it handles was
     * EMITTED before, in the scope its lineage names; no step committed (SUSPENDED) twice; at most one COMMITTED,
     * followed by nothing but a rollback (ROLLING_BACK first); nothing after ROLLED_BACK or ROLLBACK_FAILED.
     */
    /**
     * A run settled without starting, because its parent gave up while waiting for it (its engine was down, say):
     * exactly a ROLLING_BACK and a ROLLED_BACK, and no SEEN.
     */
    private static boolean neverStarted(List<Event> own) {
        return own.size() == 2 && own.get(0).type() == EventType.ROLLING_BACK
                && own.get(1).type() == EventType.ROLLED_BACK;
    }

    public static void assertRunsWellFormed(List<Event> events) {
        Log log = new Log(events);
        List<String> violations = new ArrayList<>();
        Map<MessageId, Event> emitted = new HashMap<>();
        for (Event e : events) {
            if (e.type() == EventType.EMITTED) {
                emitted.putIfAbsent(e.messageId(), e);
            }
        }
        for (Map.Entry<List<UUID>, List<Event>> run : log.runs.entrySet()) {
            String name = "run " + EventLog.shortLineage(run.getKey()) + " of saga " + run.getValue().getFirst().saga();
            List<Event> own = run.getValue();
            Event first = own.getFirst();
            if (neverStarted(own)) {
                continue;
            }
            if (first.type() != EventType.SEEN) {
                violations.add(name + " starts with " + EventLog.row(first) + " (#" + first.id() + "), not SEEN");
            }
            long seen = own.stream().filter(e -> e.type() == EventType.SEEN).count();
            if (seen != 1) {
                violations.add(name + " has " + seen + " SEEN events");
            }
            Event emission = emitted.get(first.messageId());
            List<UUID> scope = run.getKey().subList(0, run.getKey().size() - 1);
            if (emission == null) {
                violations.add(name + " handles message " + first.messageId() + " that has no EMITTED event");
            } else if (emission.id() > first.id()) {
                violations.add(name + " started (#" + first.id() + ") before its message was EMITTED (#"
                        + emission.id() + ")");
            } else if (!emission.lineage().ids().equals(scope)) {
                violations.add(name + " has lineage " + EventLog.shortLineage(run.getKey())
                        + " but its message was emitted in scope " + EventLog.shortLineage(emission.lineage().ids()));
            }
            // a step may commit more than once: loops (Flow.repeat, Flow.goTo back) run it again
            int commits = 0;
            for (int i = 0; i < own.size(); i++) {
                Event e = own.get(i);
                boolean last = i == own.size() - 1;
                if (e.type() == EventType.COMMITTED && ++commits > 1) {
                    violations.add(name + " committed twice (#" + e.id() + ")");
                }
                if ((e.type() == EventType.ROLLED_BACK || e.type() == EventType.ROLLBACK_FAILED) && !last) {
                    violations.add(name + " wrote " + EventLog.row(own.get(i + 1)) + " (#" + own.get(i + 1).id()
                            + ") after finishing with " + e.type() + " (#" + e.id() + ")");
                }
                if (e.type() == EventType.COMMITTED && !last && own.get(i + 1).type() != EventType.ROLLING_BACK) {
                    // only a rollback (compensation of a committed run) may follow a commit
                    violations.add(name + " wrote " + EventLog.row(own.get(i + 1)) + " (#" + own.get(i + 1).id()
                            + ") after COMMITTED (#" + e.id() + ") without rolling back");
                }
            }
        }
        fail("well-formed runs", violations, events);
    }

    private static void fail(String rule, List<String> violations, List<Event> events) {
        if (violations.isEmpty()) {
            return;
        }
        StringBuilder message = new StringBuilder().append(violations.size()).append(" violation(s) of ")
                .append(rule).append(" in a log of ").append(events.size()).append(" events:");
        violations.stream().limit(MAX_REPORTED).forEach(v -> message.append("\n  - ").append(v));
        if (violations.size() > MAX_REPORTED) {
            message.append("\n  ... and ").append(violations.size() - MAX_REPORTED).append(" more");
        }
        if (events.size() <= 200) {
            message.append("\nThe log:\n").append(EventLog.table(events));
        }
        throw new AssertionError(message.toString());
    }

    /** The log split into runs, scoped emissions and the parent-child relation between runs. */
    private static final class Log {
        final Map<List<UUID>, List<Event>> runs = new LinkedHashMap<>();
        final Map<List<UUID>, List<Event>> emittedBy = new HashMap<>();
        final Map<List<UUID>, List<List<UUID>>> children = new HashMap<>();

        Log(List<Event> events) {
            List<Event> sorted = new ArrayList<>(events);
            sorted.sort(Comparator.comparingLong(Event::id));
            for (Event e : sorted) {
                List<UUID> lineage = e.lineage().ids();
                if (e.type() == EventType.EMITTED) {
                    if (lineage.size() >= 2) {
                        emittedBy.computeIfAbsent(lineage, l -> new ArrayList<>()).add(e);
                    }
                } else if (RUN_EVENTS.contains(e.type()) && lineage.size() >= 2) {
                    runs.computeIfAbsent(lineage, l -> new ArrayList<>()).add(e);
                }
            }
            for (List<UUID> lineage : runs.keySet()) {
                if (lineage.size() >= 3) {
                    children.computeIfAbsent(lineage.subList(0, lineage.size() - 1), l -> new ArrayList<>())
                            .add(lineage);
                }
            }
        }
    }
}
