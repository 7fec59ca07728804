package dev.coop.internal;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.failure.Failure;
import dev.coop.inspect.Hierarchy;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.inspect.RunQuery;
import dev.coop.RunStatus;
import dev.coop.inspect.RunSummary;
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
            OffsetDateTime finished, String failure) {
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
        List<Row> rows = rows(c, "r.message_id = ?", message.value());
        return new Hierarchy(message, topic, launched, assemble(rows, events(c, scope), message));
    }

    /** The tree below one run. */
    public RunView run(Connection c, Lineage lineage) throws SQLException {
        List<Row> rows = rows(c, "r.id = ?", lineage.last());
        if (rows.isEmpty()) {
            throw new CoopValidationException("No run with lineage " + lineage + " in schema '" + schema.value() + "'");
        }
        return assemble(rows, events(c, rows.getFirst().lineage()), null).getFirst();
    }

    private List<Row> rows(Connection c, String anchor, UUID value) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH RECURSIVE tree AS (
                  SELECT r.* FROM {schema}.run r WHERE %2$s
                  UNION ALL
                  SELECT k.* FROM {schema}.run k JOIN tree t ON k.parent_id = t.id
                )
                SELECT t.id, t.message_id, m.topic, t.saga, t.lineage, t.parent_id, %1$s, t.phase = 'ROLLBACK',
                       t.created_at, t.started_at, t.finished_at, t.failure::text
                  FROM tree t JOIN {schema}.message m ON m.id = t.message_id
                 ORDER BY t.created_at, t.id
                """.formatted(shownStatus("t"), anchor)))) {
            ps.setObject(1, value);
            List<Row> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Row(rs.getObject(1, UUID.class), new MessageId(rs.getObject(2, UUID.class)),
                            rs.getString(3), rs.getString(4), (UUID[]) rs.getArray(5).getArray(),
                            rs.getObject(6, UUID.class), RunStatus.valueOf(rs.getString(7)), rs.getBoolean(8),
                            rs.getObject(9, OffsetDateTime.class), rs.getObject(10, OffsetDateTime.class),
                            rs.getObject(11, OffsetDateTime.class), rs.getString(12)));
                }
            }
            return rows;
        }
    }

    /** Every event at or below {@code scope}, in log order. */
    private List<Event> events(Connection c, UUID[] scope) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT id, message_id, type, saga, engine, step, lineage, created_at, started_at,
                       exception::text AS exception, context::text AS context
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

    private static List<RunView> assemble(List<Row> rows, List<Event> events, MessageId anchorMessage) {
        Map<UUID, List<Event>> byRun = new HashMap<>();
        for (Event e : events) {
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
                built.put(r.id(), view(r, byRun, kids.stream().map(k -> built.get(k.id())).toList()));
            }
        }
        return roots.stream().map(r -> built.get(r.id())).toList();
    }

    private static RunView view(Row r, Map<UUID, List<Event>> byRun, List<RunView> kids) {
        return new RunView(r.id(), r.message(), r.topic(), r.saga(), new Lineage(Arrays.asList(r.lineage())),
                r.status(), r.rollingBack(), r.created(), r.started(), r.finished(),
                r.failure() == null ? null : Failure.fromJson(r.failure()),
                steps(byRun.getOrDefault(r.id(), List.of())),
                kids);
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
            };
            numbered.add(new StepView(s.name(), s.kind(), s.engine(), s.startedAt(), s.endedAt(), s.launched(),
                    s.failure(), Math.max(1, iteration)));
        }
        return numbered;
    }

    private static String undoneStep(String name, String suffix) {
        String s = name.startsWith(LogNames.ROLLBACK_PREFIX) ? name.substring(LogNames.ROLLBACK_PREFIX.length()) : name;
        return !suffix.isEmpty() && s.endsWith(suffix) ? s.substring(0, s.length() - suffix.length()) : s;
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
    public List<RunSummary> runs(Connection c, RunQuery q) throws SQLException {
        StringBuilder where = new StringBuilder("TRUE");
        List<Object> values = new ArrayList<>();
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
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT r.id, r.message_id, m.topic, r.saga, r.lineage, %1$s, r.created_at, r.finished_at,
                       r.failure->>'message'
                  FROM {schema}.run r JOIN {schema}.message m ON m.id = r.message_id
                 WHERE %2$s
                 ORDER BY r.created_at DESC, r.id DESC
                 LIMIT ?
                """.formatted(shownStatus("r"), where)))) {
            int i = 0;
            for (Object v : values) {
                ps.setObject(++i, v);
            }
            ps.setInt(++i, q.limit());
            List<RunSummary> runs = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    runs.add(new RunSummary(rs.getObject(1, UUID.class), new MessageId(rs.getObject(2, UUID.class)),
                            rs.getString(3), rs.getString(4),
                            new Lineage(Arrays.asList((UUID[]) rs.getArray(5).getArray())),
                            RunStatus.valueOf(rs.getString(6)), rs.getObject(7, OffsetDateTime.class),
                            rs.getObject(8, OffsetDateTime.class), rs.getString(9)));
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
    public String whyUnfinished(Connection c, MessageId message) throws SQLException {
        List<String> parts = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH RECURSIVE h AS (
                  SELECT id, saga, CASE WHEN status = 'RUNNABLE' AND pending_children > 0 THEN 'WAITING'
                                        ELSE status END AS status
                    FROM {schema}.run WHERE message_id = ?
                  UNION ALL
                  SELECT r.id, r.saga, CASE WHEN r.status = 'RUNNABLE' AND r.pending_children > 0 THEN 'WAITING'
                                            ELSE r.status END
                    FROM {schema}.run r JOIN h ON r.parent_id = h.id
                )
                SELECT saga, status, count(*)::int AS n,
                       EXISTS (SELECT 1 FROM {schema}.engine e WHERE e.stopped_at IS NULL AND h.saga = ANY(e.sagas))
                         AS served
                  FROM h WHERE status IN ('RUNNABLE', 'WAITING', 'PARKED')
                 GROUP BY saga, status ORDER BY saga, status
                """))) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String saga = rs.getString("saga");
                    String status = rs.getString("status");
                    int n = rs.getInt("n");
                    String runs = n + (n == 1 ? " run" : " runs") + " of saga '" + saga + "'";
                    if (status.equals("PARKED")) {
                        parts.add(runs + " parked (an operator must retry or resolve: see parkedRuns)");
                    } else if (!rs.getBoolean("served")) {
                        parts.add(runs + " " + status.toLowerCase(java.util.Locale.ROOT)
                                + " with no running engine for that saga");
                    } else {
                        parts.add(runs + " " + status.toLowerCase(java.util.Locale.ROOT));
                    }
                }
            }
        }
        return parts.isEmpty() ? "nothing left to run" : String.join("; ", parts);
    }
}
