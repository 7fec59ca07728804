package dev.coop.render;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.Failure;
import dev.coop.inspect.CollapsedRuns;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunOrdering;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.RunView;
import dev.coop.inspect.RunningStep;
import dev.coop.inspect.StepView;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;

/** Reads the JSON form of {@link JsonRenderer} back into the values it was rendered from. */
final class JsonReading {
    private JsonReading() {
    }

    /** Reads {@link #render(Hierarchy)} back. */
    static Hierarchy readHierarchy(String json) {
        JsonNode n = parse(json);
        return new Hierarchy(new MessageId(uuid(n, "messageId")), text(n, "topic"), readTime(n, "launchedAt"),
                list(n.get("runs"), JsonReading::readRun));
    }

    /** Reads {@link #render(RunView)} back. */
    static RunView readRun(String json) {
        return readRun(parse(json));
    }

    /** A run whose children are being read: its JSON, the children not read yet, and those read. */
    private record Pending(JsonNode node, Iterator<JsonNode> unread, List<RunView> read) {
        Pending(JsonNode node) {
            this(node, node.path("children").iterator(), new ArrayList<>());
        }
    }

    /**
     * Reads a run and the runs below it without recursion, children first: a hierarchy thousands of levels deep
     * (a saga that launches itself) would overflow a thread's stack (1,000 levels needed more than the default 1 MB
     * when each level took a few frames).
     */
    private static RunView readRun(JsonNode root) {
        Deque<Pending> stack = new ArrayDeque<>();
        stack.push(new Pending(root));
        while (true) {
            Pending top = stack.peek();
            if (top.unread().hasNext()) {
                stack.push(new Pending(top.unread().next()));
                continue;
            }
            stack.pop();
            RunView run = readRun(top.node(), top.read());
            if (stack.isEmpty()) {
                return run;
            }
            stack.peek().read().add(run);
        }
    }

    /** One run, its children already read. */
    private static RunView readRun(JsonNode n, List<RunView> children) {
        return new RunView(uuid(n, "runId"), new MessageId(uuid(n, "messageId")), text(n, "topic"),
                text(n, "saga"), readLineage(n.get("lineage")), RunStatus.valueOf(text(n, "status")),
                n.path("rollingBack").asBoolean(), readTime(n, "createdAt"), readTime(n, "startedAt"),
                readTime(n, "finishedAt"), readFailure(n.get("failure")), list(n.get("steps"), JsonReading::readStep),
                List.copyOf(children), list(n.get("collapsed"), JsonReading::readCollapsed),
                n.path("sagaVersion").asInt(1), n.hasNonNull("waitingFor") ? n.get("waitingFor").asText() : null,
                new RunOrdering(n.path("priority").asInt(0),
                        n.path("orderingKey").isTextual() ? n.get("orderingKey").asText() : null,
                        n.path("heldBehind").isTextual() ? UUID.fromString(n.get("heldBehind").asText()) : null),
                n.hasNonNull("running") ? readRunning(n.get("running")) : null,
                n.hasNonNull("task") ? readTask(n.get("task")) : null);
    }

    private static dev.coop.inspect.TaskSummary readTask(JsonNode n) {
        return new dev.coop.inspect.TaskSummary(text(n, "name"), text(n, "key"),
                dev.coop.TaskState.valueOf(text(n, "state")), text(n, "settledBy"), readTime(n, "openedAt"),
                readTime(n, "settledAt"));
    }

    private static RunningStep readRunning(JsonNode n) {
        return new RunningStep(text(n, "step"), readTime(n, "since"), text(n, "engine"), n.path("attempt").asInt(1),
                readTime(n, "lastActivity"));
    }

    private static CollapsedRuns readCollapsed(JsonNode n) {
        Map<RunStatus, Long> byStatus = new EnumMap<>(RunStatus.class);
        n.path("byStatus").properties()
                .forEach(e -> byStatus.put(RunStatus.valueOf(e.getKey()), e.getValue().asLong()));
        return new CollapsedRuns(text(n, "saga"), n.path("total").asLong(), byStatus);
    }

    private static StepView readStep(JsonNode n) {
        return new StepView(text(n, "name"), StepView.Kind.valueOf(text(n, "kind")), text(n, "engine"),
                readTime(n, "startedAt"), readTime(n, "endedAt"),
                list(n.get("launched"), m -> new MessageId(UUID.fromString(m.asText()))),
                readFailure(n.get("failure")), n.path("iteration").asInt(1), n.path("launchedCount").asInt(0),
                n.path("attempt").asInt(0));
    }

    /** Reads {@link #renderEvents(List)} back; the exception and context come back as compact JSON text. */
    static List<Event> readEvents(String json) {
        return list(parse(json), n -> new Event(n.path("id").asLong(), new MessageId(uuid(n, "messageId")),
                EventType.valueOf(text(n, "type")), text(n, "saga"), text(n, "engine"), text(n, "step"),
                readLineage(n.get("lineage")), readTime(n, "createdAt"), readTime(n, "startedAt"),
                compact(n.get("exception")), compact(n.get("context")),
                n.hasNonNull("attempt") ? n.get("attempt").asInt() : null));
    }

    /** Reads {@link #renderRuns(List)} back. */
    static List<RunSummary> readRuns(String json) {
        return list(parse(json), n -> new RunSummary(uuid(n, "runId"), new MessageId(uuid(n, "messageId")),
                text(n, "topic"), text(n, "saga"), readLineage(n.get("lineage")),
                RunStatus.valueOf(text(n, "status")), readTime(n, "createdAt"), readTime(n, "finishedAt"),
                text(n, "failureMessage"), n.path("sagaVersion").asInt(1),
                n.hasNonNull("running") ? readRunning(n.get("running")) : null));
    }

    /** Reads {@link #renderParked(List)} back. */
    static List<ParkedRun> readParked(String json) {
        return list(parse(json), n -> new ParkedRun(uuid(n, "runId"), new MessageId(uuid(n, "messageId")),
                text(n, "saga"), readLineage(n.get("lineage")), n.path("stepIndex").asInt(),
                n.path("attempt").asInt(), readFailure(n.get("failure")), readTime(n, "createdAt"),
                text(n, "step")));
    }

    private static JsonNode parse(String json) {
        try {
            return JsonRenderer.MAPPER.readTree(Objects.requireNonNull(json, "json"));
        } catch (JsonProcessingException e) {
            throw new CoopValidationException("Not JSON: " + e.getOriginalMessage(), e);
        }
    }

    private static String text(JsonNode n, String field) {
        JsonNode v = n.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    private static UUID uuid(JsonNode n, String field) {
        String s = text(n, field);
        if (s == null) {
            throw new CoopValidationException("Missing field '" + field + "'");
        }
        return UUID.fromString(s);
    }

    private static OffsetDateTime readTime(JsonNode n, String field) {
        String s = text(n, field);
        return s == null ? null : OffsetDateTime.parse(s, DateTimeFormatter.ISO_OFFSET_DATE_TIME);
    }

    private static Lineage readLineage(JsonNode a) {
        return new Lineage(list(a, id -> UUID.fromString(id.asText())));
    }

    private static Failure readFailure(JsonNode n) {
        return n == null || n.isNull() ? null : Failure.fromJson(n.toString());
    }

    private static String compact(JsonNode n) {
        return n == null || n.isNull() ? null : n.isTextual() ? n.asText() : n.toString();
    }

    private static <T> List<T> list(JsonNode a, Function<JsonNode, T> read) {
        List<T> out = new ArrayList<>();
        if (a != null) {
            a.forEach(e -> out.add(read.apply(e)));
        }
        return List.copyOf(out);
    }
}
