package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopClient;
import dev.coop.MessageId;
import dev.coop.render.JsonMask;
import java.util.UUID;

/**
 * {@code api/io?message=<id>&run=<id>[&full=true]}: a run's input (its message's payload) and output (its result), as
 * JSON with the masked fields' values replaced by {@code "***"}; each cut at {@link #SHOWN} characters unless
 * {@code full=true}, saying how long it is.
 */
final class InputOutput {
    /** Characters of a payload or result shown before the page asks for the whole value. */
    static final int SHOWN = 4_000;

    private final CoopClient client;
    private final JsonMask mask;
    private final ObjectMapper mapper;

    InputOutput(CoopClient client, JsonMask mask, ObjectMapper mapper) {
        this.client = client;
        this.mask = mask;
        this.mapper = mapper;
    }

    ObjectNode read(Exchange ex) {
        MessageId message = Params.message(ex, "message");
        String run = Params.text(ex, "run");
        boolean full = "true".equals(Params.text(ex, "full"));
        ObjectNode o = mapper.createObjectNode();
        value(o, "payload", client.payloadJson(message), full);
        value(o, "result", run == null ? null : client.resultJson(Params.uuid("run", run)), full);
        return o;
    }

    /** {@code <name>}: the JSON value, or (cut) its first characters as text; {@code <name>Chars}, {@code <name>Cut}. */
    private void value(ObjectNode o, String name, String json, boolean full) {
        if (json == null) {
            o.putNull(name);
            o.put(name + "Chars", 0);
            o.put(name + "Cut", false);
            return;
        }
        String masked = mask.apply(json);
        boolean cut = !full && masked.length() > SHOWN;
        if (cut) {
            o.put(name, masked.substring(0, SHOWN));
        } else {
            o.set(name, parsed(masked));
        }
        o.put(name + "Chars", masked.length());
        o.put(name + "Cut", cut);
    }

    private JsonNode parsed(String json) {
        try {
            return mapper.readTree(json);
        } catch (com.fasterxml.jackson.core.JsonProcessingException notJson) {
            return mapper.getNodeFactory().textNode(json);
        }
    }
}
