package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.dashboard.Role;
import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopValidationException;
import dev.coop.render.TerminalText;
import dev.coop.inspect.AuditEntry;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunView;
import dev.coop.join.JoinId;
import dev.coop.join.JoinView;
import dev.coop.render.JsonMask;
import dev.coop.render.JsonRenderer;
import dev.coop.schedule.ScheduleSummary;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The dashboard behind authentication: its page, and a JSON API that reads through {@link CoopClient} (and
 * {@link JsonRenderer} for trees, events and listings) and takes operator actions, each recorded in the audit.
 */
public final class Handler {
    public static final String CSRF_HEADER = "X-Coop-Csrf";
    private static final Logger log = LoggerFactory.getLogger(Handler.class);
    private static final int MAX_BODY = 16 * 1024;
    private static final int EVENT_PAGE = 500;

    private final CoopClient client;
    private final JsonRenderer renderer = new JsonRenderer(false);
    private final ObjectMapper mapper = Coop.defaultObjectMapper();
    private final Actions actions;
    private final boolean standalone;

    private final JsonMask mask;
    private final InputOutput io;
    private final CountsOverTime counts;

    /** @param standalone whether the dashboard logs users in itself (it then offers to log out) */
    public Handler(CoopClient client, boolean standalone) {
        this(client, standalone, JsonMask.NONE);
    }

    /**
     * @param standalone whether the dashboard logs users in itself (it then offers to log out)
     * @param mask the fields whose values payloads, results and context values show as {@code ***}
     */
    public Handler(CoopClient client, boolean standalone, JsonMask mask) {
        this.client = client;
        this.actions = new Actions(client);
        this.standalone = standalone;
        this.mask = java.util.Objects.requireNonNull(mask, "mask");
        this.io = new InputOutput(client, mask, mapper);
        this.counts = new CountsOverTime(client, mapper);
    }

    /** Serves an authenticated caller; the adapter has set the security headers. */
    public void handle(Exchange ex, Caller caller) throws IOException {
        String path = ex.path();
        try {
            if (Assets.serve(ex, path)) {
                return;
            }
            if (path.equals("/") || path.equals("/index.html")) {
                requireGet(ex);
                ex.send(200, Assets.type("index.html"), Assets.bytes("index.html"));
            } else if (path.equals("/api/action")) {
                action(ex, caller);
            } else if (path.startsWith("/api/")) {
                requireGet(ex);
                json(ex, read(ex, caller, path.substring("/api/".length())));
            } else {
                Responses.error(ex, 404, "No such page: " + path);
            }
        } catch (BadRequest e) {
            Responses.error(ex, e.status, e.getMessage());
        } catch (CoopValidationException | IllegalArgumentException e) {
            Responses.error(ex, 400, e.getMessage());
        } catch (CoopStoreException e) { // the database's own words stay in the log
            String ref = reference();
            log.warn("The dashboard could not read or act for {} {} (ref {})", ex.method(), TerminalText.escape(path),
                    ref, e);
            Responses.error(ex, 503, "The database did not answer as expected; try again (the dashboard's log has"
                    + " the details under ref " + ref + ")");
        } catch (RuntimeException e) {
            String ref = reference();
            log.warn("The dashboard could not answer {} {} (ref {})", ex.method(), TerminalText.escape(path), ref, e);
            Responses.error(ex, 500, "The dashboard could not answer (its log has the details under ref " + ref
                    + ")");
        }
    }

    private JsonNode read(Exchange ex, Caller caller, String what) {
        return switch (what) {
            case "session" -> session(caller);
            case "runs" -> runs(ex);
            case "parked" -> parked();
            case "hierarchy" -> hierarchy(Params.message(ex, "message"));
            case "run" -> run(Params.lineage(ex, "lineage"));
            case "events" -> events(ex);
            case "schedules" -> schedules();
            case "joins" -> joins(ex);
            case "tasks" -> tasks(ex);
            case "find" -> find(Params.text(ex, "q"));
            case "io" -> io.read(ex);
            case "parked-count" -> parkedCount(ex);
            case "search" -> search(ex);
            case "counts" -> counts.read(ex);
            default -> throw new BadRequest(404, "No such API: /api/" + what);
        };
    }

    /**
     * The search box: a business key (the newest hierarchy launched with it) or an external task's key or token (its
     * hierarchy), found through indexes; message ids and lineages are opened by the page itself.
     */
    private ObjectNode find(String q) {
        if (q == null) {
            throw new BadRequest(400, "Search for what? 'q' is a business key or an external task's key or token");
        }
        ObjectNode o = mapper.createObjectNode();
        try {
            var task = client.externalTask(q);
            if (task.isPresent()) {
                o.put("messageId", task.get().lineage().getFirst().toString());
                o.put("runId", task.get().runId().toString());
                o.put("found", "external task");
                return o;
            }
        } catch (CoopValidationException e) {
            // not a task key or token (a business key may still match)
        }
        var runs = client.runs(RunQuery.newest().businessKey(q).limit(1));
        if (runs.isEmpty()) {
            throw new BadRequest(404, "Nothing has the business key, task key or token '" + q + "'");
        }
        o.put("messageId", runs.getFirst().lineage().root().toString());
        o.put("runId", runs.getFirst().runId().toString());
        o.put("found", "business key");
        return o;
    }

    /** Open external tasks, oldest first ({@code ?name=}, {@code ?limit=}), or one by {@code ?task=} token or key. */
    private ObjectNode tasks(Exchange ex) {
        String task = Params.text(ex, "task");
        java.util.List<dev.coop.inspect.TaskView> tasks = task != null
                ? client.externalTask(task).stream().toList()
                : client.openTasks(Params.text(ex, "name"), (int) Params.integer(ex, "limit", 100, 1, 10_000));
        ObjectNode o = mapper.createObjectNode();
        com.fasterxml.jackson.databind.node.ArrayNode list = o.putArray("tasks");
        java.time.Instant now = client.now();
        for (dev.coop.inspect.TaskView t : tasks) {
            ObjectNode n = list.addObject();
            n.put("runId", t.runId().toString());
            n.put("messageId", t.message().toString());
            n.put("rootMessageId", t.lineage().getFirst().toString());
            n.set("lineage", mapper.valueToTree(t.lineage().stream().map(Object::toString).toList()));
            n.put("name", t.name());
            n.put("key", t.key().orElse(null));
            n.put("token", t.token());
            n.put("state", t.state().name());
            n.put("createdAt", t.createdAt().toString());
            n.put("ageSeconds", Math.max(0, java.time.Duration.between(t.createdAt(), now).toSeconds()));
            n.put("deadline", t.deadline().map(Object::toString).orElse(null));
            n.put("settledBy", t.settledBy().orElse(null));
            n.put("failure", t.failure().orElse(null));
        }
        ObjectNode counts = o.putObject("openByName");
        client.openTaskCounts().forEach(c -> counts.put(c.name(), c.open()));
        return o;
    }

    private ObjectNode session(Caller caller) {
        ObjectNode o = mapper.createObjectNode();
        o.put("user", caller.name());
        o.put("role", caller.role().name());
        o.put("csrf", caller.csrf());
        o.put("logout", standalone && caller.csrf() != null);
        return o;
    }

    private ObjectNode runs(Exchange ex) {
        RunQuery q = RunQuery.newest().limit((int) Params.integer(ex, "limit", 50, 1, RunQuery.MAX_LIMIT));
        String status = Params.text(ex, "status");
        if (status != null) {
            q = q.status(Params.status(status));
        }
        String saga = Params.text(ex, "saga");
        if (saga != null) {
            q = q.saga(saga);
        }
        String topic = Params.text(ex, "topic");
        if (topic != null) {
            q = q.topic(topic);
        }
        String businessKey = Params.text(ex, "key");
        if (businessKey != null) {
            q = q.businessKey(businessKey);
        }
        String tag = Params.text(ex, "tag");
        if (tag != null) {
            q = q.tag(tag);
        }
        String failureType = Params.text(ex, "failureType");
        if (failureType != null) {
            q = q.failureType(failureType);
        }
        OffsetDateTime since = Params.time(ex, "since");
        if (since != null) {
            q = q.since(since);
        }
        RunQuery counted = q;
        OffsetDateTime before = Params.time(ex, "before");
        if (before != null) {
            q = q.before(before);
        }
        ObjectNode o = mapper.createObjectNode();
        o.set("runs", tree(renderer.renderRuns(client.runs(q))));
        ObjectNode counts = o.putObject("counts");
        RunQuery all = counted.status() == null
                ? counted
                : new RunQuery(null, counted.saga(), counted.topic(), counted.since(), null, counted.limit(),
                        counted.businessKey(), counted.tag(), counted.failureType());
        for (Map.Entry<RunStatus, Long> e : client.countRuns(all).entrySet()) {
            counts.put(e.getKey().name(), e.getValue());
        }
        return o;
    }

    /**
     * The messages the text names: by id, by idempotency key ({@link CoopClient#search}); more kinds of keys (the
     * business keys of the outside world, say) come through the same call and show their own {@code matchedBy}.
     */
    private ObjectNode search(Exchange ex) {
        String text = Params.text(ex, "q");
        if (text == null) {
            throw new BadRequest(400, "Missing parameter 'q': what to search for");
        }
        ObjectNode o = mapper.createObjectNode();
        o.put("query", text);
        ArrayNode matches = o.putArray("matches");
        for (dev.coop.inspect.MessageMatch m : client.search(text)) {
            ObjectNode n = matches.addObject();
            n.put("messageId", m.messageId().toString());
            n.put("topic", m.topic());
            n.put("launchedAt", str(m.launchedAt()));
            n.put("matchedBy", m.matchedBy());
        }
        return o;
    }

    private ObjectNode parkedCount(Exchange ex) {
        String saga = Params.text(ex, "saga");
        if (saga == null) {
            throw new BadRequest(400, "Missing parameter 'saga'");
        }
        ObjectNode o = mapper.createObjectNode();
        o.put("saga", saga);
        o.put("parked", client.countParked(saga));
        return o;
    }

    private JsonNode parked() {
        return tree(renderer.renderParked(client.parkedRuns(200)));
    }

    private ObjectNode hierarchy(MessageId message) {
        Hierarchy h = client.tree(message);
        ObjectNode o = mapper.createObjectNode();
        o.set("hierarchy", renderer.hierarchy(h));
        o.put("now", OffsetDateTime.now().toString());
        o.set("audit", audit(message));
        o.set("parked", parkedIn(message.value()));
        return o;
    }

    private ObjectNode run(Lineage lineage) {
        RunView r = client.tree(lineage);
        ObjectNode o = mapper.createObjectNode();
        o.set("run", renderer.run(r));
        o.put("now", OffsetDateTime.now().toString());
        o.set("audit", audit(new MessageId(r.lineage().root()))); // the run's own hierarchy, however it was named
        o.set("parked", parkedIn(r.lineage().root()));
        return o;
    }

    private ArrayNode parkedIn(UUID root) {
        List<ParkedRun> parked = new ArrayList<>();
        for (ParkedRun p : client.parkedRuns(1_000)) {
            if (p.lineage().root().equals(root)) {
                parked.add(p);
            }
        }
        return (ArrayNode) tree(renderer.renderParked(parked));
    }

    private ArrayNode audit(MessageId message) {
        ArrayNode a = mapper.createArrayNode();
        for (AuditEntry e : client.audit(message)) {
            ObjectNode o = a.addObject();
            o.put("id", e.id());
            o.put("messageId", e.messageId().toString());
            ArrayNode scope = o.putArray("scope");
            if (e.scope() != null) {
                e.scope().ids().forEach(id -> scope.add(id.toString()));
            }
            o.put("action", e.action());
            o.put("actor", e.actor());
            o.put("reason", e.reason());
            o.put("outcome", e.outcome());
            o.put("createdAt", e.createdAt().toString());
        }
        return a;
    }

    private ObjectNode events(Exchange ex) {
        MessageId message = Params.message(ex, "message");
        long after = Params.integer(ex, "after", 0, 0, Long.MAX_VALUE);
        int limit = (int) Params.integer(ex, "limit", EVENT_PAGE, 1, 10_000);
        ObjectNode o = mapper.createObjectNode();
        JsonNode events = tree(renderer.renderEvents(client.events(message, after, limit)));
        for (JsonNode e : events) { // context values as masked as payloads and results
            if (e.get("context") != null && e.get("context").isContainerNode()) {
                mask.apply(e.get("context"));
            }
        }
        o.set("events", events);
        return o;
    }

    private ArrayNode schedules() {
        ArrayNode a = mapper.createArrayNode();
        for (ScheduleSummary s : client.schedules()) {
            ObjectNode o = a.addObject();
            o.put("name", s.name());
            o.put("topic", s.topic());
            o.put("schedule", s.schedule().toString());
            o.put("paused", s.paused());
            o.put("nextDue", str(s.nextDue()));
            o.put("lastDue", str(s.lastDue()));
            o.put("lastFiredAt", str(s.lastFiredAt()));
            o.put("lastMessage", s.lastMessage() == null ? null : s.lastMessage().toString());
            o.put("skipped", s.skipped());
            o.put("payload", s.payloadJson());
        }
        return a;
    }

    private ArrayNode joins(Exchange ex) {
        List<JoinView> views = new ArrayList<>();
        String id = Params.text(ex, "id");
        String key = Params.text(ex, "key");
        if (id != null) {
            JoinView v = client.joins().get(JoinId.parse(id));
            if (v != null) {
                views.add(v);
            }
        } else if (key != null) {
            views.addAll(client.joins().byKey(key, 100));
        } else {
            throw new BadRequest(400, "Name a join: ?id=<join id> or ?key=<key>");
        }
        ArrayNode a = mapper.createArrayNode();
        for (JoinView v : views) {
            ObjectNode o = a.addObject();
            o.put("id", v.id().toString());
            o.put("key", v.key());
            o.put("status", v.status().name());
            o.put("expected", v.expected());
            o.put("attached", v.attached());
            o.put("completed", v.completed());
            o.put("failed", v.failed());
            o.put("onCompleteTopic", v.onCompleteTopic());
            o.put("onFailTopic", v.onFailTopic());
            o.put("timeoutAt", str(v.timeoutAt()));
            o.put("createdAt", str(v.createdAt()));
            o.put("finishedAt", str(v.finishedAt()));
            o.put("outcomeMessage", v.outcomeMessage() == null ? null : v.outcomeMessage().toString());
            ArrayNode members = o.putArray("members");
            for (JoinView.Member m : v.members()) {
                ObjectNode mo = members.addObject();
                mo.put("message", m.message().toString());
                mo.put("state", m.state().name());
                mo.put("reported", m.reported());
                mo.put("attachedAt", str(m.attachedAt()));
                mo.put("settledAt", str(m.settledAt()));
            }
        }
        return a;
    }

    private void action(Exchange ex, Caller caller) throws IOException {
        if (!ex.method().equals("POST")) {
            throw new BadRequest(405, "Actions are POST requests");
        }
        checkCsrf(ex, caller);
        String type = ex.header("Content-Type");
        if (type == null || !type.toLowerCase().startsWith("application/json")) {
            throw new BadRequest(415, "An action is a JSON body (Content-Type: application/json)");
        }
        JsonNode body;
        try {
            body = mapper.readTree(ex.body(MAX_BODY));
        } catch (IOException e) {
            throw new BadRequest(400, "The action is not valid JSON: " + e.getMessage());
        }
        if (body == null || !body.isObject()) {
            throw new BadRequest(400, "The action must be a JSON object");
        }
        json(ex, actions.take(body, caller, mapper));
    }

    /** A cookie session's action must echo its CSRF token, and come from this origin when the browser says so. */
    private static void checkCsrf(Exchange ex, Caller caller) {
        if (caller.csrf() == null) {
            return; // credentials a script sends itself: a forged cross-site request cannot carry them
        }
        String sent = ex.header(CSRF_HEADER);
        if (sent == null || !MessageDigest.isEqual(sent.getBytes(StandardCharsets.UTF_8),
                caller.csrf().getBytes(StandardCharsets.UTF_8))) {
            throw new BadRequest(403, "Missing or wrong CSRF token: reload the page");
        }
        String origin = ex.header("Origin");
        String host = ex.header("Host");
        if (origin != null && host != null && !origin.equals("null")) {
            String bare = origin.replaceFirst("^[a-zA-Z]+://", "");
            if (!bare.equalsIgnoreCase(host)) {
                throw new BadRequest(403, "Cross-origin action refused (Origin " + origin + ", Host " + host + ")");
            }
        }
    }

    private static void requireGet(Exchange ex) {
        if (!ex.method().equals("GET") && !ex.method().equals("HEAD")) {
            throw new BadRequest(405, "Only GET here");
        }
    }

    private JsonNode tree(String json) {
        try {
            return mapper.readTree(json);
        } catch (IOException e) {
            throw new IllegalStateException("Could not read back the rendered JSON", e);
        }
    }

    private void json(Exchange ex, JsonNode node) throws IOException {
        ex.send(200, "application/json; charset=utf-8", mapper.writeValueAsBytes(node));
    }

    private static String str(Object o) {
        return o == null ? null : o.toString();
    }

    private static String reference() {
        return Long.toString(java.util.concurrent.ThreadLocalRandom.current().nextLong(1L << 40), 36);
    }

    /** The refusal of a body larger than {@code max} bytes. */
    public static RuntimeException tooLarge(int max) {
        return new BadRequest(413, "The request body is larger than " + max + " bytes");
    }

    /** A request the dashboard refuses, with its HTTP status. */
    static final class BadRequest extends RuntimeException {
        final int status;

        BadRequest(int status, String message) {
            super(message);
            this.status = status;
        }
    }
}
