package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopClient;
import dev.coop.RunStatus;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.MessageMatch;
import dev.coop.inspect.RunQuery;
import dev.coop.render.JsonRenderer;
import java.time.OffsetDateTime;
import java.util.Map;

/** The dashboard's lists of runs: by filters with their counts, parked runs, and what a search box finds. */
final class RunListings {
    private final CoopClient client;
    private final JsonRenderer renderer;
    private final ObjectMapper mapper;

    RunListings(CoopClient client, JsonRenderer renderer, ObjectMapper mapper) {
        this.client = client;
        this.renderer = renderer;
        this.mapper = mapper;
    }

    ObjectNode runs(Exchange ex) {
        RunQuery counted = query(ex);
        RunQuery q = counted;
        OffsetDateTime before = Params.time(ex, "before");
        if (before != null) {
            q = q.before(before);
        }
        ObjectNode o = mapper.createObjectNode();
        o.set("runs", JsonText.tree(mapper, renderer.renderRuns(client.runs(q))));
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

    /** The runs the parameters select (all but {@code before}: the counts are of every page). */
    private static RunQuery query(Exchange ex) {
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
        return q;
    }

    JsonNode parked() {
        return JsonText.tree(mapper, renderer.renderParked(client.parkedRuns(200)));
    }

    ObjectNode parkedCount(Exchange ex) {
        String saga = Params.text(ex, "saga");
        if (saga == null) {
            throw new Handler.BadRequest(400, "Missing parameter 'saga'");
        }
        ObjectNode o = mapper.createObjectNode();
        o.put("saga", saga);
        o.put("parked", client.countParked(saga));
        return o;
    }

    /**
     * The messages the text names: by id, by idempotency key ({@link CoopClient#search}); more kinds of keys (the
     * business keys of the outside world, say) come through the same call and show their own {@code matchedBy}.
     */
    ObjectNode search(Exchange ex) {
        String text = Params.text(ex, "q");
        if (text == null) {
            throw new Handler.BadRequest(400, "Missing parameter 'q': what to search for");
        }
        ObjectNode o = mapper.createObjectNode();
        o.put("query", text);
        ArrayNode matches = o.putArray("matches");
        for (MessageMatch m : client.search(text)) {
            ObjectNode n = matches.addObject();
            n.put("messageId", m.messageId().toString());
            n.put("topic", m.topic());
            n.put("launchedAt", JsonText.str(m.launchedAt()));
            n.put("matchedBy", m.matchedBy());
        }
        return o;
    }

    /**
     * The search box: a business key (the newest hierarchy launched with it) or an external task's key or token (its
     * hierarchy), found through indexes; message ids and lineages are opened by the page itself.
     */
    ObjectNode find(String q) {
        if (q == null) {
            throw new Handler.BadRequest(400,
                    "Search for what? 'q' is a business key or an external task's key or token");
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
            throw new Handler.BadRequest(404, "Nothing has the business key, task key or token '" + q + "'");
        }
        o.put("messageId", runs.getFirst().lineage().root().toString());
        o.put("runId", runs.getFirst().runId().toString());
        o.put("found", "business key");
        return o;
    }
}
