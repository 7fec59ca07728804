package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopClient;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.inspect.AuditEntry;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunView;
import dev.coop.render.JsonMask;
import dev.coop.render.JsonRenderer;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** A hierarchy or a run's subtree with its audit and parked runs, and a hierarchy's event log, for the dashboard. */
final class TreeViews {
    private static final int EVENT_PAGE = 500;

    private final CoopClient client;
    private final JsonRenderer renderer;
    private final ObjectMapper mapper;
    private final JsonMask mask;

    TreeViews(CoopClient client, JsonRenderer renderer, ObjectMapper mapper, JsonMask mask) {
        this.client = client;
        this.renderer = renderer;
        this.mapper = mapper;
        this.mask = mask;
    }

    ObjectNode hierarchy(MessageId message) {
        Hierarchy h = client.tree(message);
        ObjectNode o = mapper.createObjectNode();
        o.set("hierarchy", renderer.hierarchy(h));
        o.put("now", OffsetDateTime.now().toString());
        o.set("audit", audit(message));
        o.set("parked", parkedIn(message.value()));
        return o;
    }

    ObjectNode run(Lineage lineage) {
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
        return (ArrayNode) JsonText.tree(mapper, renderer.renderParked(parked));
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

    ObjectNode events(Exchange ex) {
        MessageId message = Params.message(ex, "message");
        long after = Params.integer(ex, "after", 0, 0, Long.MAX_VALUE);
        int limit = (int) Params.integer(ex, "limit", EVENT_PAGE, 1, 10_000);
        ObjectNode o = mapper.createObjectNode();
        JsonNode events = JsonText.tree(mapper, renderer.renderEvents(client.events(message, after, limit)));
        for (JsonNode e : events) { // context values as masked as payloads and results
            if (e.get("context") != null && e.get("context").isContainerNode()) {
                mask.apply(e.get("context"));
            }
        }
        o.set("events", events);
        return o;
    }
}
