package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopClient;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.AuditEntry;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Operator actions: cancel, roll back, retry a parked run, mark a parked step done. Each needs a reason and leaves
 * an audit entry (who, when, why, and what came of it, refusals included).
 */
final class Actions {
    private final CoopClient client;

    Actions(CoopClient client) {
        this.client = client;
    }

    /** Takes {@code {"action", "message" or "lineage", "reason"}}; answers with the outcome and the audit entry. */
    ObjectNode take(JsonNode body, String actor, ObjectMapper mapper) {
        String action = text(body, "action");
        String reason = text(body, "reason");
        if (action == null) {
            throw new Handler.BadRequest(400, "Which action? 'action' is one of cancel, rollback, retry, mark-done");
        }
        if (reason == null) {
            throw new Handler.BadRequest(400, "A reason is required: it is recorded with your name in the audit");
        }
        if (action.equals("retry-parked")) {
            return retryParked(body, actor, reason, mapper);
        }
        Lineage lineage = lineage(body);
        MessageId message = lineage != null ? new MessageId(lineage.root()) : message(body);
        requireAudit(message);
        String outcome;
        boolean ok = true;
        try {
            outcome = switch (action) {
                case "cancel" -> lineage == null
                        ? client.cancel(message, reason).name()
                        : client.cancel(lineage, reason).name();
                case "rollback" -> rollback(message, lineage, reason);
                case "retry" -> client.retryNow(run(lineage, action)) ? "RETRYING" : "NOT_PARKED";
                case "mark-done" -> client.markStepDone(run(lineage, action)) ? "MARKED_DONE" : "NOT_PARKED";
                default -> throw new Handler.BadRequest(400, "Unknown action '" + action
                        + "': use cancel, rollback, retry or mark-done");
            };
        } catch (CoopValidationException e) {
            ok = false;
            outcome = "REFUSED: " + e.getMessage();
        }
        AuditEntry entry = client.recordAudit(message, lineage, action, actor, reason, outcome);
        ObjectNode o = mapper.createObjectNode();
        o.put("ok", ok && !outcome.equals("NOT_PARKED"));
        o.put("outcome", outcome);
        o.put("auditId", entry.id());
        o.put("messageId", message.toString());
        return o;
    }

    /**
     * Every parked run of a saga, retried in batches ({@link CoopClient#retryParked}), each hierarchy audited. The
     * page states the count it confirmed ({@code expected}); the answer says how many were retried.
     */
    private ObjectNode retryParked(JsonNode body, String actor, String reason, ObjectMapper mapper) {
        String saga = text(body, "saga");
        if (saga == null) {
            throw new Handler.BadRequest(400, "'retry-parked' needs the 'saga' whose parked runs to retry");
        }
        long retried = client.retryParked(saga, actor, reason);
        ObjectNode o = mapper.createObjectNode();
        o.put("ok", true);
        o.put("outcome", "RETRYING " + retried);
        o.put("retried", retried);
        return o;
    }

    /** No action that could not be audited: a schema without the audit table (not migrated) refuses them all. */
    private void requireAudit(MessageId message) {
        try {
            client.audit(message);
        } catch (CoopStoreException e) {
            throw new Handler.BadRequest(503, "Actions are refused while they cannot be audited (" + e.getMessage()
                    + "); apply Coop's schema migrations, e.g. 'coop migrate'");
        }
    }

    private String rollback(MessageId message, Lineage lineage, String reason) {
        if (lineage == null) {
            client.rollback(message, reason);
        } else {
            client.rollback(lineage, reason);
        }
        return "REQUESTED";
    }

    private static UUID run(Lineage lineage, String action) {
        if (lineage == null || lineage.depth() < 2) {
            throw new Handler.BadRequest(400, "'" + action + "' acts on a parked run: give its 'lineage'");
        }
        return lineage.last();
    }

    private static MessageId message(JsonNode body) {
        String m = text(body, "message");
        if (m == null) {
            throw new Handler.BadRequest(400, "Name what to act on: 'message' (a message id) or 'lineage' (a run)");
        }
        return new MessageId(Params.uuid("message", m));
    }

    private static Lineage lineage(JsonNode body) {
        JsonNode l = body.get("lineage");
        if (l == null || l.isNull()) {
            return null;
        }
        if (!l.isArray() || l.isEmpty() || l.size() > 10_000) {
            throw new Handler.BadRequest(400, "'lineage' is an array of ids, root message first");
        }
        List<UUID> ids = new ArrayList<>();
        l.forEach(id -> ids.add(Params.uuid("lineage", id.asText())));
        return new Lineage(ids);
    }

    private static String text(JsonNode body, String field) {
        JsonNode v = body.get(field);
        return v == null || !v.isTextual() || v.asText().isBlank() ? null : v.asText().strip();
    }
}
