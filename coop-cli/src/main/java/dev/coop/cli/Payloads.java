package dev.coop.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopClient;
import dev.coop.inspect.RunView;
import dev.coop.render.JsonMask;
import java.util.ArrayDeque;
import java.util.List;

/**
 * {@code coop tree --payloads}: each run's message payload and result as JSON, masked ({@link JsonMask}) and cut at a
 * number of characters (the whole value with {@code --max-chars 0}).
 */
final class Payloads {
    private final CoopClient client;
    private final JsonMask mask;
    private final int maxChars;

    Payloads(CoopClient client, JsonMask mask, int maxChars) {
        this.client = client;
        this.mask = mask;
        this.maxChars = maxChars;
    }

    /** Runs whose payload and result are shown at most (two statements each). */
    static final int MAX_RUNS = 200;

    /** The lines printed after the tree: per run, its saga, id, payload and result. */
    String lines(List<RunView> roots) {
        StringBuilder out = new StringBuilder("\nPayloads and results\n");
        List<RunView> runs = all(roots);
        for (RunView r : runs.subList(0, Math.min(runs.size(), MAX_RUNS))) {
            out.append("  ").append(r.saga()).append("  run ").append(r.runId()).append('\n');
            out.append("    payload ").append(shown(client.payloadJson(r.messageId()))).append('\n');
            String result = client.resultJson(r.runId());
            out.append("    result  ").append(result == null ? "-" : shown(result)).append('\n');
        }
        if (runs.size() > MAX_RUNS) {
            out.append("  (the first ").append(MAX_RUNS).append(" of ").append(runs.size())
                    .append(" runs; coop tree --run <run-id> --payloads for the others)\n");
        }
        return out.toString();
    }

    /** Adds {@code payload} and {@code result} (JSON text, masked and cut) to every run of a rendered tree. */
    void addTo(JsonNode tree) {
        ArrayDeque<JsonNode> todo = new ArrayDeque<>();
        tree.path("runs").forEach(todo::push);
        if (tree.has("runId")) {
            todo.push(tree);
        }
        int shown = 0;
        while (!todo.isEmpty() && shown++ < MAX_RUNS) {
            ObjectNode run = (ObjectNode) todo.pop();
            run.put("payload", shown(client.payloadJson(
                    new dev.coop.MessageId(java.util.UUID.fromString(run.get("messageId").asText())))));
            String result = client.resultJson(java.util.UUID.fromString(run.get("runId").asText()));
            run.put("result", result == null ? null : shown(result));
            run.path("children").forEach(todo::push);
        }
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper MAPPER = new com.fasterxml.jackson.databind.ObjectMapper();

    /** Masked, on one line without spaces between tokens (as stored, PostgreSQL puts some), cut. */
    private String shown(String json) {
        String masked = compact(mask.apply(json));
        if (maxChars > 0 && masked.length() > maxChars) {
            return masked.substring(0, maxChars) + " ... (" + masked.length() + " characters; --max-chars 0 shows all)";
        }
        return masked;
    }

    private static String compact(String json) {
        try {
            return MAPPER.writeValueAsString(MAPPER.readTree(json));
        } catch (com.fasterxml.jackson.core.JsonProcessingException notJson) {
            return json;
        }
    }

    private static List<RunView> all(List<RunView> roots) {
        return roots.stream().flatMap(r -> r.flatten().stream()).toList();
    }
}
