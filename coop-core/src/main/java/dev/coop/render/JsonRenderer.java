package dev.coop.render;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.inspect.Event;
import dev.coop.failure.Failure;
import dev.coop.inspect.Hierarchy;
import dev.coop.Lineage;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.CollapsedRuns;
import dev.coop.inspect.RunOrdering;
import dev.coop.inspect.RunView;
import dev.coop.inspect.RunningStep;
import dev.coop.inspect.StepView;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The JSON form of what inspection returns: cooperation trees, event logs, run listings and parked runs. Field names
 * and shapes are stable and documented in docs/inspection.md; later versions only add fields. Timestamps are ISO-8601
 * strings with offset, ids are UUID strings, failures are the failure documents of docs/protocol.md, and absent
 * values are {@code null} (never left out). Every {@code read...} method reads the form back: rendering, then reading,
 * gives an equal value. Thread-safe.
 */
public final class JsonRenderer {
    /**
     * Trees nest two or three JSON levels per level of the hierarchy, so Jackson's default limit of 1,000 levels would
     * refuse hierarchies a few hundred deep; a tree is Coop's own data, so the limit is lifted far beyond that.
     */
    private static final int MAX_NESTING = 100_000;
    static final ObjectMapper MAPPER = new ObjectMapper(com.fasterxml.jackson.core.JsonFactory.builder()
            .streamWriteConstraints(com.fasterxml.jackson.core.StreamWriteConstraints.builder()
                    .maxNestingDepth(MAX_NESTING).build())
            .streamReadConstraints(com.fasterxml.jackson.core.StreamReadConstraints.builder()
                    .maxNestingDepth(MAX_NESTING).build())
            .build());
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private final boolean pretty;

    /** Indented output when {@code pretty}, one line otherwise. */
    public JsonRenderer(boolean pretty) {
        this.pretty = pretty;
    }

    // ---- cooperation trees

    /** A hierarchy as JSON text. */
    public String render(Hierarchy hierarchy) {
        return write(hierarchy(hierarchy));
    }

    /** A run and everything below it as JSON text. */
    public String render(RunView run) {
        return write(run(run));
    }

    public ObjectNode hierarchy(Hierarchy h) {
        Objects.requireNonNull(h, "hierarchy");
        ObjectNode n = NODES.objectNode();
        n.put("messageId", h.messageId().toString());
        n.put("topic", h.topic());
        n.put("launchedAt", time(h.launchedAt()));
        n.put("finished", h.finished());
        String outcome = TextFormat.outcome(h.runs(), h.finished());
        n.put("outcome", "RUNNING".equals(outcome) ? null : outcome);
        ArrayNode runs = n.putArray("runs");
        h.runs().forEach(r -> runs.add(run(r)));
        return n;
    }

    /**
     * A run and the runs below it, without recursion (a hierarchy may be thousands of levels deep: a saga that
     * launches itself; a few frames per level overflowed the default 1 MB thread stack at about 1,000 levels).
     */
    public ObjectNode run(RunView r) {
        ObjectNode root = runFields(r);
        Deque<Map.Entry<RunView, ObjectNode>> todo = new ArrayDeque<>();
        todo.push(Map.entry(r, root));
        while (!todo.isEmpty()) {
            Map.Entry<RunView, ObjectNode> next = todo.pop();
            ArrayNode children = (ArrayNode) next.getValue().get("children");
            for (RunView child : next.getKey().children()) {
                ObjectNode c = runFields(child);
                children.add(c);
                todo.push(Map.entry(child, c));
            }
        }
        return root;
    }

    /** A run's own fields, its {@code children} still empty. */
    private ObjectNode runFields(RunView r) {
        ObjectNode n = NODES.objectNode();
        n.put("runId", r.runId().toString());
        n.put("messageId", r.messageId().toString());
        n.put("topic", r.topic());
        n.put("saga", r.saga());
        if (dev.coop.ExternalTask.SAGA.equals(r.saga())) {
            n.put("externalTask", true); // its topic is the task's name
            if (r.task() != null) {
                n.set("task", task(r.task()));
            }
        }
        n.put("sagaVersion", r.sagaVersion());
        n.set("lineage", lineage(r.lineage()));
        n.put("status", r.status().name());
        n.put("rollingBack", r.rollingBack());
        if (r.waitingFor() != null) {
            n.put("waitingFor", r.waitingFor());
        }
        if (r.running() != null) { // only while an engine executes one of its steps
            n.set("running", running(r.running()));
        }
        ordering(n, r.ordering());
        n.put("createdAt", time(r.createdAt()));
        n.put("startedAt", time(r.startedAt()));
        n.put("finishedAt", time(r.finishedAt()));
        n.put("durationMs", millis(TextFormat.runStart(r), r.finishedAt()));
        n.set("failure", failure(r.failure()));
        ArrayNode steps = n.putArray("steps");
        r.steps().forEach(s -> steps.add(step(s)));
        n.putArray("children");
        collapsed(n.putArray("collapsed"), r.collapsed());
        return n;
    }

    /** A run's launch options, only those set. */
    private static void ordering(ObjectNode n, RunOrdering o) {
        if (o.priority() != 0) { // launch options: only when set
            n.put("priority", o.priority());
        }
        if (o.orderingKey() != null) {
            n.put("orderingKey", o.orderingKey());
        }
        if (o.heldBehind() != null) {
            n.put("heldBehind", o.heldBehind().toString());
        }
    }

    /** The children a read counted instead of listing, per saga and status. */
    private static void collapsed(ArrayNode collapsed, List<CollapsedRuns> groups) {
        for (CollapsedRuns g : groups) {
            ObjectNode group = collapsed.addObject();
            group.put("saga", g.saga());
            group.put("total", g.total());
            ObjectNode byStatus = group.putObject("byStatus");
            g.byStatus().entrySet().stream().sorted(Map.Entry.comparingByKey())
                    .forEach(e -> byStatus.put(e.getKey().name(), e.getValue()));
        }
    }

    /** An external task's story: {@code name, key, state, settledBy, openedAt, settledAt, waitedMs}. */
    public ObjectNode task(dev.coop.inspect.TaskSummary t) {
        ObjectNode n = NODES.objectNode();
        n.put("name", t.name());
        n.put("key", t.key());
        n.put("state", t.state().name());
        n.put("settledBy", t.settledBy());
        n.put("openedAt", time(t.openedAt()));
        n.put("settledAt", time(t.settledAt()));
        n.put("waitedMs", t.settledAt() == null ? null : t.waited(null).toMillis());
        return n;
    }

    public ObjectNode running(RunningStep s) {
        ObjectNode n = NODES.objectNode();
        n.put("step", s.step());
        n.put("since", time(s.since()));
        n.put("engine", s.engine());
        n.put("attempt", s.attempt());
        n.put("lastActivity", time(s.lastActivity()));
        return n;
    }

    public ObjectNode step(StepView s) {
        ObjectNode n = NODES.objectNode();
        n.put("name", s.name());
        n.put("kind", s.kind().name());
        n.put("engine", s.engine());
        n.put("startedAt", time(s.startedAt()));
        n.put("endedAt", time(s.endedAt()));
        n.put("durationMs", millis(s.startedAt(), s.endedAt()));
        ArrayNode launched = n.putArray("launched");
        s.launched().forEach(m -> launched.add(m.toString()));
        n.put("launchedCount", s.launchedCount());
        n.set("failure", failure(s.failure()));
        if (s.iteration() > 1) {
            n.put("iteration", s.iteration());
        }
        if (s.attempt() > 0) { // ATTEMPT_FAILED and PARKED only
            n.put("attempt", s.attempt());
        }
        return n;
    }

    /** Reads {@link #render(Hierarchy)} back. */
    public Hierarchy readHierarchy(String json) {
        return JsonReading.readHierarchy(json);
    }

    /** Reads {@link #render(RunView)} back. */
    public RunView readRun(String json) {
        return JsonReading.readRun(json);
    }

    // ---- event logs

    /** An event log as a JSON array, in order. */
    public String renderEvents(List<Event> events) {
        ArrayNode a = NODES.arrayNode();
        events.forEach(e -> a.add(event(e)));
        return write(a);
    }

    public ObjectNode event(Event e) {
        ObjectNode n = NODES.objectNode();
        n.put("id", e.id());
        n.put("messageId", e.messageId().toString());
        n.put("type", e.type().name());
        n.put("saga", e.saga());
        n.put("engine", e.engine());
        n.put("step", e.step());
        n.set("lineage", lineage(e.lineage()));
        n.put("createdAt", time(e.createdAt()));
        n.put("startedAt", time(e.startedAt()));
        n.set("exception", embedded(e.exception()));
        n.set("context", embedded(e.context()));
        if (e.attempt() != null) { // ATTEMPT_FAILED and PARKED only
            n.put("attempt", e.attempt());
        }
        return n;
    }

    /** Reads {@link #renderEvents(List)} back; the exception and context come back as compact JSON text. */
    public List<Event> readEvents(String json) {
        return JsonReading.readEvents(json);
    }

    // ---- listings

    /** A run listing as a JSON array, in the order given (newest first from the client). */
    public String renderRuns(List<RunSummary> runs) {
        ArrayNode a = NODES.arrayNode();
        for (RunSummary r : runs) {
            ObjectNode n = a.addObject();
            n.put("runId", r.runId().toString());
            n.put("messageId", r.messageId().toString());
            n.put("topic", r.topic());
            n.put("saga", r.saga());
            n.put("sagaVersion", r.sagaVersion());
            n.set("lineage", lineage(r.lineage()));
            n.put("status", r.status().name());
            n.put("createdAt", time(r.createdAt()));
            n.put("finishedAt", time(r.finishedAt()));
            n.put("failureMessage", r.failureMessage());
            if (r.running() != null) { // only while an engine executes one of its steps
                n.set("running", running(r.running()));
            }
        }
        return write(a);
    }

    /** Reads {@link #renderRuns(List)} back. */
    public List<RunSummary> readRuns(String json) {
        return JsonReading.readRuns(json);
    }

    /** Parked runs as a JSON array. */
    public String renderParked(List<ParkedRun> parked) {
        ArrayNode a = NODES.arrayNode();
        for (ParkedRun p : parked) {
            ObjectNode n = a.addObject();
            n.put("runId", p.runId().toString());
            n.put("messageId", p.messageId().toString());
            n.put("saga", p.saga());
            n.set("lineage", lineage(p.lineage()));
            n.put("stepIndex", p.stepIndex());
            n.put("step", p.step());
            n.put("attempt", p.attempt());
            n.set("failure", failure(p.failure()));
            n.put("createdAt", time(p.createdAt()));
        }
        return write(a);
    }

    /** Reads {@link #renderParked(List)} back. */
    public List<ParkedRun> readParked(String json) {
        return JsonReading.readParked(json);
    }

    /** Any node as JSON text, indented if this renderer is pretty. */
    public String write(JsonNode node) {
        try {
            return pretty
                    ? MAPPER.writer(SerializationFeature.INDENT_OUTPUT).writeValueAsString(node)
                    : MAPPER.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("Cannot write JSON", e);
        }
    }

    // ---- helpers

    private static ArrayNode lineage(Lineage lineage) {
        ArrayNode a = NODES.arrayNode();
        lineage.ids().forEach(id -> a.add(id.toString()));
        return a;
    }

    private static JsonNode failure(Failure f) {
        return f == null ? NODES.nullNode() : embedded(f.toJson());
    }

    private static JsonNode embedded(String json) {
        if (json == null) {
            return NODES.nullNode();
        }
        try {
            return MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            return NODES.textNode(json);
        }
    }

    private static String time(OffsetDateTime t) {
        return t == null ? null : DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(t);
    }

    private static Long millis(OffsetDateTime from, OffsetDateTime to) {
        return from == null || to == null ? null : Math.max(0, Duration.between(from, to).toMillis());
    }

}
