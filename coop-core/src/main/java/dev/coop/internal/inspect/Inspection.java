package dev.coop.internal.inspect;

import dev.coop.internal.limit.SagaLimits;
import dev.coop.internal.store.LogNames;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.CollapsedRuns;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.failure.Failure;
import dev.coop.inspect.Hierarchy;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.inspect.RunQuery;
import dev.coop.RunStatus;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.RunOrdering;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** Reads cooperation trees and run listings: the run table for state, the event log for what happened. */
public final class Inspection {
    private final SchemaName schema;

    public Inspection(SchemaName schema) {
        this.schema = schema;
    }

    /** A run row, before its steps and children are attached. */
    private record Row(UUID id, MessageId message, String topic, String saga, UUID[] lineage, UUID parent,
            RunStatus status, boolean rollingBack, OffsetDateTime created, OffsetDateTime started,
            OffsetDateTime finished, String failure, int sagaVersion, RunOrdering ordering) {
    }

    /** A tree this small (runs) is read whole, as long as its hierarchy's log is small too. */
    static final int SMALL_TREE = 5_000;
    /** Events of a hierarchy read whole through its root; a larger log is read only for the runs loaded. */
    static final int SMALL_LOG = 20_000;
    /** A run with more child runs than this has them counted, listing only those that did not commit. */
    public static final int COLLAPSE_OVER = 100;
    /** Of a collapsed run's children, how many that did not commit are listed (oldest first). */
    public static final int LISTED_MAX = 100;
    /** Runs a bounded read loads at most; past it, every further parent is collapsed. */
    static final int MAX_LOADED = 10_000;

    private static final String ROW = """
            SELECT r.id, r.message_id, m.topic, r.saga, r.lineage, r.parent_id, %s, r.phase = 'ROLLBACK',
                   r.created_at, r.started_at, r.finished_at, r.failure::text, r.saga_version, r.priority,
                   r.ordering_key,
                   CASE WHEN r.status = 'HELD' THEN
                     (SELECT a.id FROM {schema}.run a WHERE a.saga = r.saga AND a.ordering_key = r.ordering_key
                         AND a.status IN ('RUNNABLE', 'WAITING', 'PARKED') LIMIT 1) END AS held_behind
            """.formatted(shownStatus("r"));

    /** The runs read and, for collapsed runs, their children's counts. */
    private record Read(List<Row> rows, Map<UUID, List<CollapsedRuns>> collapsed,
            Map<UUID, Map<Integer, Integer>> launchedBySeq, List<Event> events) {
    }

    /** The tree below a message. */
    public Hierarchy hierarchy(Connection c, MessageId message) throws SQLException {
        String topic;
        OffsetDateTime launched;
        UUID[] scope;
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT m.topic, m.created_at, e.lineage FROM {schema}.message m
                  JOIN {schema}.event e ON e.message_id = m.id AND e.type = 'EMITTED'
                 WHERE m.id = ?
                """))) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new CoopValidationException("No message " + message + " in schema '" + schema.value() + "'");
                }
                topic = rs.getString(1);
                launched = rs.getObject(2, OffsetDateTime.class);
                scope = (UUID[]) rs.getArray(3).getArray();
            }
        }
        Read read = read(c, "r.message_id = ?", message.value(), scope);
        return new Hierarchy(message, topic, launched,
                assemble(read, message, waitingFor(c, read.rows()), running(c, read.rows())));
    }

    /** The tree below one run. */
    public RunView run(Connection c, Lineage lineage) throws SQLException {
        List<Row> anchor = rows(c, "r.id = ?", lineage.last());
        if (anchor.isEmpty()) {
            throw new CoopValidationException("No run with lineage " + lineage + " in schema '" + schema.value() + "'");
        }
        if (lineage.depth() > 1) { // a lineage of one element names the run by its id alone
            Operations.requireLineage(lineage, anchor.getFirst().lineage());
        }
        Read read = read(c, "r.id = ?", lineage.last(), anchor.getFirst().lineage());
        return assemble(read, null, waitingFor(c, read.rows()), running(c, read.rows())).getFirst();
    }

    /**
     * Reads the runs below {@code anchor} and their events. A small tree in a small hierarchy is read whole, as it
     * always was; otherwise level by level ({@link #walk}) and the events only of the runs loaded, by message.
     */
    private Read read(Connection c, String anchor, UUID value, UUID[] scope) throws SQLException {
        if (treeSize(c, anchor, value) <= SMALL_TREE) {
            List<Row> rows = recursiveRows(c, anchor, value);
            boolean smallLog = logSize(c, scope[0]) <= SMALL_LOG;
            return new Read(rows, Map.of(), Map.of(), smallLog ? events(c, scope) : eventsOf(c, rows, scope));
        }
        Map<UUID, List<CollapsedRuns>> collapsed = new HashMap<>();
        List<Row> rows = walk(c, rows(c, anchor, value), collapsed);
        return new Read(rows, collapsed, launchedBySeq(c, collapsed.keySet()), eventsOf(c, rows, scope));
    }

    /** How many runs the tree has, counting no further than one past {@link #SMALL_TREE}. */
    private int treeSize(Connection c, String anchor, UUID value) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH RECURSIVE tree AS (
                  SELECT r.id FROM {schema}.run r WHERE %s
                  UNION ALL
                  SELECT k.id FROM {schema}.run k JOIN tree t ON k.parent_id = t.id
                )
                SELECT count(*) FROM (SELECT 1 FROM tree LIMIT ?) x
                """.formatted(anchor)))) {
            ps.setObject(1, value);
            ps.setInt(2, SMALL_TREE + 1);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** How many events the hierarchy of root message {@code root} has, counting no further than past the limit. */
    private int logSize(Connection c, UUID root) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT count(*) FROM (SELECT 1 FROM {schema}.event WHERE lineage[1] = ? LIMIT ?) x
                """))) {
            ps.setObject(1, root);
            ps.setInt(2, SMALL_LOG + 1);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /**
     * Loads the tree level by level, a few statements per level: the children of a parent with at most
     * {@link #COLLAPSE_OVER} of them are loaded; a larger fan-out is counted per saga and status, and only its
     * children that did not commit are loaded (at most {@link #LISTED_MAX} per parent). At most {@link #MAX_LOADED}
     * runs are loaded in all; parents past that are counted only.
     */
    private List<Row> walk(Connection c, List<Row> anchors, Map<UUID, List<CollapsedRuns>> collapsed)
            throws SQLException {
        List<Row> all = new ArrayList<>(anchors);
        List<UUID> level = anchors.stream().map(Row::id).toList();
        while (!level.isEmpty()) {
            Map<UUID, List<CollapsedRuns>> groups = childGroups(c, level);
            List<UUID> small = new ArrayList<>();
            List<UUID> large = new ArrayList<>();
            long budget = MAX_LOADED - all.size();
            for (UUID parent : level) {
                List<CollapsedRuns> g = groups.get(parent);
                long n = g == null ? 0 : g.stream().mapToLong(CollapsedRuns::total).sum();
                if (n == 0) {
                    continue;
                }
                if (n <= COLLAPSE_OVER && n <= budget) {
                    small.add(parent);
                    budget -= n;
                } else {
                    large.add(parent);
                    collapsed.put(parent, g);
                }
            }
            List<Row> next = new ArrayList<>();
            if (!small.isEmpty()) {
                next.addAll(rows(c, "r.parent_id = ANY(?)", small.toArray(UUID[]::new)));
            }
            int listed = large.isEmpty() ? 0 : (int) Math.min(LISTED_MAX, budget / large.size());
            if (listed > 0) {
                next.addAll(notCommitted(c, large, listed));
            }
            all.addAll(next);
            level = next.stream().map(Row::id).toList();
        }
        all.sort(java.util.Comparator.comparing(Row::created).thenComparing(Row::id));
        return all;
    }

    /** The children of each parent, counted per saga and status. */
    private Map<UUID, List<CollapsedRuns>> childGroups(Connection c, List<UUID> parents) throws SQLException {
        Map<UUID, Map<String, Map<RunStatus, Long>>> counts = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT r.parent_id, r.saga, %s AS shown, count(*) FROM {schema}.run r
                 WHERE r.parent_id = ANY(?) GROUP BY r.parent_id, r.saga, shown ORDER BY r.parent_id, r.saga, shown
                """.formatted(shownStatus("r"))))) {
            ps.setArray(1, c.createArrayOf("uuid", parents.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.computeIfAbsent(rs.getObject(1, UUID.class), k -> new LinkedHashMap<>())
                            .computeIfAbsent(rs.getString(2), k -> new java.util.EnumMap<>(RunStatus.class))
                            .put(RunStatus.valueOf(rs.getString(3)), rs.getLong(4));
                }
            }
        }
        Map<UUID, List<CollapsedRuns>> groups = new HashMap<>();
        counts.forEach((parent, bySaga) -> groups.put(parent, bySaga.entrySet().stream()
                .map(e -> new CollapsedRuns(e.getKey(), e.getValue().values().stream().mapToLong(Long::longValue)
                        .sum(), e.getValue()))
                .toList()));
        return groups;
    }

    /**
     * For each collapsed parent: per step instance ({@code parent_seq}), how many distinct messages its children
     * handle, so that its steps can say how many they launched without listing them.
     */
    private Map<UUID, Map<Integer, Integer>> launchedBySeq(Connection c, java.util.Set<UUID> parents)
            throws SQLException {
        Map<UUID, Map<Integer, Integer>> counts = new HashMap<>();
        if (parents.isEmpty()) {
            return counts;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT parent_id, parent_seq, count(DISTINCT message_id) FROM {schema}.run
                 WHERE parent_id = ANY(?) AND parent_seq IS NOT NULL GROUP BY parent_id, parent_seq
                """))) {
            ps.setArray(1, c.createArrayOf("uuid", parents.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.computeIfAbsent(rs.getObject(1, UUID.class), k -> new HashMap<>())
                            .put(rs.getInt(2), rs.getInt(3));
                }
            }
        }
        return counts;
    }

    /** Up to {@code limit} children of each parent that did not commit, oldest first. */
    private List<Row> notCommitted(Connection c, List<UUID> parents, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(ROW + """
                  FROM unnest(?::uuid[]) p(id)
                  CROSS JOIN LATERAL (SELECT * FROM {schema}.run k WHERE k.parent_id = p.id AND k.status <> 'COMMITTED'
                                       ORDER BY k.created_at, k.id LIMIT ?) r
                  JOIN {schema}.message m ON m.id = r.message_id
                """))) {
            ps.setArray(1, c.createArrayOf("uuid", parents.toArray()));
            ps.setInt(2, limit);
            return readRows(ps);
        }
    }

    /** The runs matching one fixed condition on {@code r} (one bound value), oldest first. */
    private List<Row> rows(Connection c, String where, Object value) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(ROW + """
                  FROM {schema}.run r JOIN {schema}.message m ON m.id = r.message_id
                 WHERE %s
                 ORDER BY r.created_at, r.id
                """.formatted(where)))) {
            ps.setObject(1, value instanceof UUID[] ids ? c.createArrayOf("uuid", ids) : value);
            return readRows(ps);
        }
    }

    private List<Row> recursiveRows(Connection c, String anchor, UUID value) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH RECURSIVE tree AS (
                  SELECT r.* FROM {schema}.run r WHERE %s
                  UNION ALL
                  SELECT k.* FROM {schema}.run k JOIN tree t ON k.parent_id = t.id
                )
                """.formatted(anchor) + ROW + """
                  FROM tree r JOIN {schema}.message m ON m.id = r.message_id
                 ORDER BY r.created_at, r.id
                """))) {
            ps.setObject(1, value);
            return readRows(ps);
        }
    }

    private static List<Row> readRows(PreparedStatement ps) throws SQLException {
        List<Row> rows = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                rows.add(new Row(rs.getObject(1, UUID.class), new MessageId(rs.getObject(2, UUID.class)),
                        rs.getString(3), rs.getString(4), (UUID[]) rs.getArray(5).getArray(),
                        rs.getObject(6, UUID.class), RunStatus.valueOf(rs.getString(7)), rs.getBoolean(8),
                        rs.getObject(9, OffsetDateTime.class), rs.getObject(10, OffsetDateTime.class),
                        rs.getObject(11, OffsetDateTime.class), rs.getString(12), rs.getInt(13),
                        new RunOrdering(rs.getInt(14), rs.getString(15), rs.getObject(16, UUID.class))));
            }
        }
        return rows;
    }

    /** Every event at or below {@code scope}, in log order. */
    private List<Event> events(Connection c, UUID[] scope) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT id, message_id, type, saga, engine, step, lineage, created_at, started_at,
                       exception::text AS exception, context::text AS context, attempt
                  FROM {schema}.event
                 WHERE lineage[1] = ? AND lineage[1:cardinality(?::uuid[])] = ?::uuid[]
                 ORDER BY id
                """))) {
            var array = c.createArrayOf("uuid", scope);
            ps.setObject(1, scope[0]);
            ps.setArray(2, array);
            ps.setArray(3, array);
            return Store.readEvents(ps);
        }
    }

    /**
     * The events of the messages the loaded runs handle, at or below {@code scope}, in log order: each run's own
     * events, and the EMITTED (and ROLLBACK_EMITTED) events of its message, which belong to the step that launched it.
     * Through the message index: nothing else of the hierarchy is read.
     */
    private List<Event> eventsOf(Connection c, List<Row> rows, UUID[] scope) throws SQLException {
        UUID[] messages = rows.stream().map(r -> r.message().value()).distinct().toArray(UUID[]::new);
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT id, message_id, type, saga, engine, step, lineage, created_at, started_at,
                       exception::text AS exception, context::text AS context, attempt
                  FROM {schema}.event
                 WHERE message_id = ANY(?) AND lineage[1:cardinality(?::uuid[])] = ?::uuid[]
                 ORDER BY id
                """))) {
            var array = c.createArrayOf("uuid", scope);
            ps.setArray(1, c.createArrayOf("uuid", messages));
            ps.setArray(2, array);
            ps.setArray(3, array);
            return Store.readEvents(ps);
        }
    }

    /**
     * Why the tree's runnable runs wait, when their saga's limits hold them back: read only when the tree has
     * runnable runs of limited sagas (two statements: the sagas' states, from {@code pg_locks} and the rate window,
     * and which of those runs are due and not locked by a step transaction right now).
     */
    private Map<UUID, String> waitingFor(Connection c, List<Row> rows) throws SQLException {
        List<Row> runnable = rows.stream().filter(r -> r.status() == RunStatus.RUNNABLE).toList();
        if (runnable.isEmpty()) {
            return Map.of();
        }
        Map<String, SagaLimits.State> states = new SagaLimits(schema).states(c,
                runnable.stream().map(Row::saga).distinct().toList(), null);
        List<UUID> held = runnable.stream().filter(r -> states.containsKey(r.saga())
                && states.get(r.saga()).reason() != null).map(Row::id).toList();
        if (held.isEmpty()) {
            return Map.of();
        }
        Map<UUID, String> reasons = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT r.id, r.saga FROM {schema}.run r
                 WHERE r.id = ANY(?) AND r.status = 'RUNNABLE' AND r.runnable_at <= clock_timestamp()
                   AND NOT EXISTS (SELECT 1 FROM pg_locks l -- a step transaction holds the row: running
                                    WHERE l.locktype = 'transactionid' AND l.transactionid = r.xmax)
                """))) {
            ps.setArray(1, c.createArrayOf("uuid", held.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    reasons.put(rs.getObject(1, UUID.class), states.get(rs.getString(2)).reason());
                }
            }
        }
        return reasons;
    }

    /** The steps engines execute right now in the tree's runnable runs ({@link RunningSteps}). */
    private Map<UUID, RunningSteps.Live> running(Connection c, List<Row> rows) throws SQLException {
        return new RunningSteps(schema).read(c,
                rows.stream().filter(r -> r.status() == RunStatus.RUNNABLE).map(Row::id).toList());
    }

    private static List<RunView> assemble(Read read, MessageId anchorMessage, Map<UUID, String> waitingFor,
            Map<UUID, RunningSteps.Live> running) {
        List<Row> rows = read.rows();
        Map<UUID, List<Event>> byRun = new HashMap<>();
        for (Event e : read.events()) {
            if (e.saga() != null || e.type() == EventType.CANCELLATION_REQUESTED) {
                byRun.computeIfAbsent(e.lineage().last(), k -> new ArrayList<>()).add(e);
            }
        }
        Map<UUID, List<Row>> children = new LinkedHashMap<>();
        List<Row> roots = new ArrayList<>();
        java.util.Set<UUID> ids = new java.util.HashSet<>();
        rows.forEach(r -> ids.add(r.id()));
        for (Row r : rows) {
            if (r.parent() != null && ids.contains(r.parent())) {
                children.computeIfAbsent(r.parent(), k -> new ArrayList<>()).add(r);
            } else {
                roots.add(r);
            }
        }
        // children before parents, without recursion: a hierarchy may be thousands of levels deep
        Map<UUID, RunView> built = new HashMap<>();
        java.util.ArrayDeque<Object[]> stack = new java.util.ArrayDeque<>();
        roots.forEach(r -> stack.push(new Object[]{r, false}));
        while (!stack.isEmpty()) {
            Object[] top = stack.pop();
            Row r = (Row) top[0];
            List<Row> kids = children.getOrDefault(r.id(), List.of());
            if (!(Boolean) top[1]) {
                stack.push(new Object[]{r, true});
                kids.forEach(k -> stack.push(new Object[]{k, false}));
            } else {
                built.put(r.id(), view(r, byRun, kids.stream().map(k -> built.get(k.id())).toList(),
                        read.collapsed().getOrDefault(r.id(), List.of()), read.launchedBySeq(),
                        waitingFor.get(r.id()), running.get(r.id())));
            }
        }
        return roots.stream().map(r -> built.get(r.id())).toList();
    }

    private static RunView view(Row r, Map<UUID, List<Event>> byRun, List<RunView> kids,
            List<CollapsedRuns> collapsed, Map<UUID, Map<Integer, Integer>> launchedBySeq, String waitingFor,
            RunningSteps.Live live) {
        List<StepView> steps = counted(steps(byRun.getOrDefault(r.id(), List.of())), launchedBySeq.get(r.id()));
        return new RunView(r.id(), r.message(), r.topic(), r.saga(), new Lineage(Arrays.asList(r.lineage())),
                r.status(), r.rollingBack(), r.created(), r.started(), r.finished(),
                r.failure() == null ? null : Failure.fromJson(r.failure()), steps,
                kids, collapsed, r.sagaVersion(), live == null ? waitingFor : null, r.ordering(),
                live == null ? null : live.view(steps));
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

    /**
     * The status readers show for the run aliased {@code alias}: a RUNNABLE run that still awaits children (it is
     * due early, at a barrier timer or its deadline) is WAITING.
     */
    private static String shownStatus(String alias) {
        return ("CASE WHEN %1$s.status = 'RUNNABLE' AND %1$s.pending_children > 0 THEN 'WAITING' ELSE %1$s.status END")
                .formatted(alias);
    }

    /** Runs newest first, filtered; every condition is a fixed fragment with a bound value. */
    /** How many runs match the query's status, saga, topic and age (its limit does not apply), by status. */
    public Map<RunStatus, Long> countRuns(Connection c, RunQuery q) throws SQLException {
        StringBuilder where = new StringBuilder("TRUE");
        List<Object> values = new ArrayList<>();
        filter(q, where, values);
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT %1$s, count(*) FROM {schema}.run r JOIN {schema}.message m ON m.id = r.message_id
                 WHERE %2$s GROUP BY 1
                """.formatted(shownStatus("r"), where)))) {
            int i = 0;
            for (Object v : values) {
                ps.setObject(++i, v);
            }
            Map<RunStatus, Long> counts = new java.util.EnumMap<>(RunStatus.class);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.put(RunStatus.valueOf(rs.getString(1)), rs.getLong(2));
                }
            }
            return counts;
        }
    }

    /**
     * The query's conditions as fixed fragments, each with a bound value ({@code r}: the run, {@code m}: its message).
     */
    static void filter(RunQuery q, StringBuilder where, List<Object> values) {
        if (q.status() == dev.coop.RunStatus.WAITING) {
            where.append(" AND (r.status = 'WAITING' OR (r.status = 'RUNNABLE' AND r.pending_children > 0))");
        } else if (q.status() == dev.coop.RunStatus.RUNNABLE) {
            where.append(" AND r.status = 'RUNNABLE' AND r.pending_children = 0");
        } else if (q.status() != null) {
            where.append(" AND r.status = ?");
            values.add(q.status().name());
        }
        if (q.saga() != null) {
            where.append(" AND r.saga = ?");
            values.add(q.saga());
        }
        if (q.topic() != null) {
            where.append(" AND m.topic = ?");
            values.add(q.topic());
        }
        if (q.since() != null) {
            where.append(" AND r.created_at >= ?");
            values.add(q.since());
        }
        if (q.before() != null) {
            where.append(" AND r.created_at < ?");
            values.add(q.before());
        }
        if (q.businessKey() != null) { // index message_business_key, then run_message
            where.append(" AND m.business_key = ?");
            values.add(q.businessKey());
        }
        if (q.tag() != null) { // index message_tags (GIN)
            where.append(" AND m.tags @> ARRAY[?::text]");
            values.add(q.tag());
        }
        if (q.failureType() != null) { // the class name, or its simple name
            where.append(" AND (r.failure->>'type' = ? OR right(r.failure->>'type', length(?) + 1) = '.' || ?)");
            values.add(q.failureType());
            values.add(q.failureType());
            values.add(q.failureType());
        }
    }

    /** A page of runs, newest first: the filters, then the newest along index {@code run_created}. */
    private static final String RUNS = """
            SELECT r.id, r.message_id, m.topic, r.saga, r.lineage, %1$s, r.created_at, r.finished_at,
                   r.failure->>'message', r.saga_version
              FROM {schema}.run r JOIN {schema}.message m ON m.id = r.message_id
             WHERE %2$s
             ORDER BY r.created_at DESC, r.id DESC
             LIMIT ?
            """;

    /** How many of the newest runs a query by tag looks through before it reads the tag index instead. */
    static final int TAG_WALK = 10_000;

    /** By tag, first among the {@link #TAG_WALK} newest runs: a common tag fills its page there. */
    private static final String RUNS_AMONG_NEWEST = """
            SELECT r.id, r.message_id, m.topic, r.saga, r.lineage, %1$s, r.created_at, r.finished_at,
                   r.failure->>'message', r.saga_version
              FROM (SELECT id, message_id, saga, lineage, status, pending_children, created_at, finished_at, failure,
                           saga_version
                      FROM {schema}.run ORDER BY created_at DESC, id DESC LIMIT %3$d) r
              JOIN {schema}.message m ON m.id = r.message_id
             WHERE %2$s
             ORDER BY r.created_at DESC, r.id DESC
             LIMIT ?
            """;

    /**
     * By tag, the tagged messages first (index {@code message_tags}), then each one's runs (index
     * {@code run_message}): fences ({@code OFFSET 0}, a lateral join) fix that order, whatever the planner guesses.
     * PostgreSQL estimates a tag absent from its statistics (most tags, when a few are common) at up to 0.5 % of the
     * messages, and with that guess it would rather walk {@code run_created} backwards: on ten million runs, a tag of
     * ten runs took longer than the client's timeout.
     */
    private static final String RUNS_TAG_FIRST = """
            SELECT r.id, r.message_id, m.topic, r.saga, r.lineage, %1$s, r.created_at, r.finished_at,
                   r.failure->>'message', r.saga_version
              FROM (SELECT * FROM {schema}.message x WHERE x.tags @> ARRAY[?::text] OFFSET 0) m
             CROSS JOIN LATERAL (SELECT * FROM {schema}.run x WHERE x.message_id = m.id OFFSET 0) r
             WHERE %2$s
             ORDER BY r.created_at DESC, r.id DESC
             LIMIT ?
            """;

    /**
     * Runs newest first, filtered. By tag, two bounded reads instead of the planner's guess: the newest
     * {@link #TAG_WALK} runs (a common tag fills its page there), else the runs of the tagged messages.
     */
    public List<RunSummary> runs(Connection c, RunQuery q) throws SQLException {
        StringBuilder where = new StringBuilder("TRUE");
        List<Object> values = new ArrayList<>();
        filter(q, where, values);
        if (q.tag() == null) {
            return page(c, RUNS.formatted(shownStatus("r"), where), values, q.limit());
        }
        List<RunSummary> newest = page(c, RUNS_AMONG_NEWEST.formatted(shownStatus("r"), where, TAG_WALK), values,
                q.limit());
        if (newest.size() >= q.limit()) {
            return newest;
        }
        List<Object> tagFirst = new ArrayList<>(values);
        tagFirst.addFirst(q.tag());
        return page(c, RUNS_TAG_FIRST.formatted(shownStatus("r"), where), tagFirst, q.limit());
    }

    private List<RunSummary> page(Connection c, String sql, List<Object> values, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(sql))) {
            int i = 0;
            for (Object v : values) {
                ps.setObject(++i, v);
            }
            ps.setInt(++i, limit);
            List<RunSummary> runs = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    runs.add(new RunSummary(rs.getObject(1, UUID.class), new MessageId(rs.getObject(2, UUID.class)),
                            rs.getString(3), rs.getString(4),
                            new Lineage(Arrays.asList((UUID[]) rs.getArray(5).getArray())),
                            RunStatus.valueOf(rs.getString(6)), rs.getObject(7, OffsetDateTime.class),
                            rs.getObject(8, OffsetDateTime.class), rs.getString(9), rs.getInt(10)));
                }
            }
            return runs;
        }
    }

    /**
     * Why a hierarchy has not finished, for a timeout's message: its unfinished runs by saga and status, saying which
     * are parked and which are runnable with no running engine for their saga (engines that stopped cleanly do not
     * count; crashed ones still do). Walks the runs by {@code parent_id}; only used when a wait gives up.
     */
    /** How many runs are RUNNABLE, WAITING, PARKED and HELD: a scan of the index of unfinished runs only. */
    public java.util.Map<dev.coop.RunStatus, Long> unfinishedRuns(Connection c) throws SQLException {
        java.util.Map<dev.coop.RunStatus, Long> counts = new java.util.EnumMap<>(dev.coop.RunStatus.class);
        counts.put(dev.coop.RunStatus.RUNNABLE, 0L);
        counts.put(dev.coop.RunStatus.WAITING, 0L);
        counts.put(dev.coop.RunStatus.PARKED, 0L);
        counts.put(dev.coop.RunStatus.HELD, 0L);
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT status, count(*) FROM {schema}.run
                 WHERE status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD') GROUP BY status
                """));
                java.sql.ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                counts.put(dev.coop.RunStatus.valueOf(rs.getString(1)), rs.getLong(2));
            }
        }
        return counts;
    }

    public String whyUnfinished(Connection c, MessageId message) throws SQLException {
        List<String> parts = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH RECURSIVE h AS (
                  SELECT id, saga, saga_version, CASE WHEN status = 'RUNNABLE' AND pending_children > 0 THEN 'WAITING'
                                                      ELSE status END AS status
                    FROM {schema}.run WHERE message_id = ?
                  UNION ALL
                  SELECT r.id, r.saga, r.saga_version,
                         CASE WHEN r.status = 'RUNNABLE' AND r.pending_children > 0 THEN 'WAITING' ELSE r.status END
                    FROM {schema}.run r JOIN h ON r.parent_id = h.id
                )
                SELECT saga, saga_version, status, count(*)::int AS n,
                       EXISTS (SELECT 1 FROM {schema}.engine e
                                WHERE e.stopped_at IS NULL
                                  AND (h.saga || '@' || h.saga_version = ANY(e.versions)
                                       OR (e.versions IS NULL AND h.saga_version = 1 AND h.saga = ANY(e.sagas))))
                         AS served,
                       EXISTS (SELECT 1 FROM {schema}.engine e WHERE e.stopped_at IS NULL AND h.saga = ANY(e.sagas))
                         AS named
                  FROM h WHERE status IN ('RUNNABLE', 'WAITING', 'PARKED', 'HELD')
                 GROUP BY saga, saga_version, status ORDER BY saga, saga_version, status
                """))) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String saga = rs.getString("saga");
                    int version = rs.getInt("saga_version");
                    String status = rs.getString("status");
                    int n = rs.getInt("n");
                    String runs = n + (n == 1 ? " run" : " runs") + " of saga '" + saga + "'"
                            + (version == 1 ? "" : " version " + version);
                    if (status.equals("PARKED")) {
                        parts.add(runs + " parked (an operator must retry or resolve: see parkedRuns)");
                    } else if (status.equals("HELD")) {
                        parts.add(runs + " held (an earlier run of the saga with the same ordering key has not"
                                + " finished)");
                    } else if (!rs.getBoolean("served")) {
                        parts.add(runs + " " + status.toLowerCase(java.util.Locale.ROOT)
                                + (version == 1 && !rs.getBoolean("named")
                                        ? " with no running engine for that saga"
                                        : " with no running engine for version " + version + " of that saga"));
                    } else {
                        parts.add(runs + " " + status.toLowerCase(java.util.Locale.ROOT));
                    }
                }
            }
        }
        return parts.isEmpty() ? "nothing left to run" : String.join("; ", parts);
    }
}
