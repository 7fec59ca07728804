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
            q = Params.valid("saga", q, saga, RunQuery::saga);
        }
        String topic = Params.text(ex, "topic");
        if (topic != null) {
            q = Params.valid("topic", q, topic, RunQuery::topic);
        }
        String businessKey = Params.text(ex, "key");
        if (businessKey != null) {
            q = Params.valid("key", q, businessKey, RunQuery::businessKey);
        }
        String tag = Params.text(ex, "tag");
        if (tag != null) {
            q = Params.valid("tag", q, tag, RunQuery::tag);
        }
        String failureType = Params.text(ex, "failureType");
        if (failureType != null) {
            q = Params.valid("failureType", q, failureType, RunQuery::failureType);
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
     * The search box ({@code api/search}, and {@code api/find}, its older name): every message the text names
     * ({@link CoopClient#search(String, OffsetDateTime, int)}: by id, idempotency key, business key, tag, or an
     * external task's key or token), newest first, {@code limit} (default 50) a page; {@code next} is the
     * {@code before} of the next page, present while a page is full.
     */
    ObjectNode search(Exchange ex) {
        String text = Params.text(ex, "q");
        if (text == null) {
            throw new Handler.BadRequest(400, "Missing parameter 'q': what to search for (a message id, an"
                    + " idempotency or business key, a tag, an external task's key or token)");
        }
        OffsetDateTime before = Params.time(ex, "before");
        int limit = (int) Params.integer(ex, "limit", 50, 1, 100);
        java.util.List<MessageMatch> found;
        try {
            found = client.search(text, before, limit);
        } catch (CoopValidationException e) {
            throw new Handler.BadRequest(400, "Parameter 'q' is refused: " + e.getMessage());
        }
        ObjectNode o = mapper.createObjectNode();
        o.put("query", text);
        ArrayNode matches = o.putArray("matches");
        for (MessageMatch m : found) {
            ObjectNode n = matches.addObject();
            n.put("messageId", m.messageId().toString());
            n.put("topic", m.topic());
            n.put("launchedAt", JsonText.str(m.launchedAt()));
            n.put("matchedBy", m.matchedBy());
        }
        if (found.size() == limit) {
            o.put("next", JsonText.str(found.getLast().launchedAt()));
        }
        return o;
    }
}
