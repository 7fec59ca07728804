package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopClient;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.dashboard.Role;
import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.AuditEntry;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Operator actions: cancel, roll back, retry a parked run, mark a parked step done (and complete or fail an external
 * task, {@link TaskActions}). Each needs a reason and leaves
 * an audit entry under the hierarchy it names (who, when, why, and what came of it, refusals included: a viewer's
 * attempt, an unknown action, a missing or unfit reason, a lineage that is not its run's).
 */
final class Actions {
    private final CoopClient client;
    private final TaskActions tasks;

    Actions(CoopClient client) {
        this.client = client;
        this.tasks = new TaskActions(client);
    }

    /**
     * Takes {@code {"action", "message" or "lineage", "reason"}} for the caller; answers with the outcome and the
     * audit entry. A refusal (a viewer's action, an unknown action, a missing or unfit reason) is audited under the
     * hierarchy the request named, then answered with its status.
     */
    ObjectNode take(JsonNode body, Caller caller, ObjectMapper mapper) {
        String action = text(body, "action");
        if (TaskActions.handles(action)) {
            String reason = text(body, "reason");
            return tasks.take(action, body, reason, caller.name(), refusal(caller, action, reason), mapper);
        }
        if (RETRY_PARKED.equals(action) || SelectionActions.handles(action)) { // many hierarchies: each is
            String reason = text(body, "reason"); // audited as it is acted on;
            Refusal refusal = refusal(caller, action, reason); // a refusal is not
            if (refusal != null) {
                throw new Handler.BadRequest(refusal.status(), refusal.why());
            }
            return RETRY_PARKED.equals(action)
                    ? retryParked(body, caller.name(), reason, mapper)
                    : new SelectionActions(client).take(action, body, caller.name(), reason, mapper);
        }
        Lineage lineage = lineage(body);
        MessageId message = lineage != null ? new MessageId(lineage.root()) : message(body);
        requireAudit(message);
        String reason = text(body, "reason");
        Refusal refusal = refusal(caller, action, reason);
        if (refusal != null) {
            client.recordAudit(message, lineage, KNOWN.contains(action) ? action : "unknown", caller.name(),
                    reason == null ? "(none given)" : Reasons.forAudit(reason), REFUSED + refusal.why());
            throw new Handler.BadRequest(refusal.status(), refusal.why());
        }
        String outcome = act(action, message, lineage, reason);
        AuditEntry entry = client.recordAudit(message, lineage, action, caller.name(), reason, outcome);
        ObjectNode o = mapper.createObjectNode();
        o.put("ok", !outcome.startsWith(REFUSED) && !outcome.equals("NOT_PARKED"));
        o.put("outcome", outcome);
        o.put("auditId", entry.id());
        o.put("messageId", message.toString());
        return notDone(o, outcome.startsWith(REFUSED) ? 400 : 409);
    }

    /**
     * An answer that did not do what was asked says so with its HTTP status ({@code status}: 400 for a refused
     * request, 409 for one the state refused, e.g. a run no longer parked) and an {@code error} the page shows;
     * its audit entry is written already.
     */
    static ObjectNode notDone(ObjectNode o, int status) {
        if (!o.path("ok").asBoolean(true)) {
            o.put("status", status);
            o.put("error", o.path("outcome").asText());
        }
        return o;
    }

    /** The HTTP status of an action's answer. */
    static int status(JsonNode answer) {
        return answer.path("ok").asBoolean(true) ? 200 : answer.path("status").asInt(400);
    }

    private static final String REFUSED = "REFUSED: ";

    /** Takes an action on one hierarchy (a scope of it, or one run); what came of it, or why it was refused. */
    private String act(String action, MessageId message, Lineage lineage, String reason) {
        try {
            return switch (action) {
                case "cancel" -> lineage == null
                        ? client.cancel(message, reason).name()
                        : client.cancel(lineage, reason).name();
                case "rollback" -> rollback(message, lineage, reason);
                case "retry" -> client.retryNow(run(lineage, action)) ? "RETRYING" : "NOT_PARKED";
                default -> client.markStepDone(run(lineage, action)) ? "MARKED_DONE" : "NOT_PARKED";
            };
        } catch (CoopValidationException e) {
            return REFUSED + e.getMessage();
        }
    }

    /** Why an action is refused, and the HTTP status that says so. */
    record Refusal(int status, String why) {
    }

    private static final String RETRY_PARKED = "retry-parked";
    private static final java.util.Set<String> KNOWN = java.util.Set.of("cancel", "rollback", "retry", "mark-done",
            RETRY_PARKED, SelectionActions.CANCEL, SelectionActions.ROLLBACK, TaskActions.COMPLETE, TaskActions.FAIL);

    private static Refusal refusal(Caller caller, String action, String reason) {
        if (caller.role() != Role.OPERATOR) {
            return new Refusal(403, "User '" + caller.name() + "' may only read (role " + caller.role()
                    + "); actions need the OPERATOR role");
        }
        if (action == null || !KNOWN.contains(action)) {
            return new Refusal(400, (action == null
                    ? "Which action?"
                    : "Unknown action '" + Reasons.forAudit(action)
                            + "':")
                    + " 'action' is one of cancel, rollback, retry, mark-done, retry-parked, cancel-selection,"
                    + " rollback-selection, complete-task, fail-task");
        }
        String unfit = Reasons.unfit(reason);
        return unfit == null ? null : new Refusal(400, unfit);
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

    private static Lineage run(Lineage lineage, String action) {
        if (lineage == null || lineage.depth() < 2) {
            throw new CoopValidationException("'" + action + "' acts on a parked run: give its 'lineage'");
        }
        return lineage;
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

    static String text(JsonNode body, String field) {
        JsonNode v = body.get(field);
        return v == null || !v.isTextual() || v.asText().isBlank() ? null : v.asText().strip();
    }
}
