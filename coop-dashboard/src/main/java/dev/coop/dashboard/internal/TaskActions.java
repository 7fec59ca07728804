package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopClient;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.TaskRefusedException;
import dev.coop.inspect.AuditEntry;
import dev.coop.inspect.TaskView;

/**
 * Operators complete or fail external tasks: {@code {"action": "complete-task", "task", "result", "reason"}} or
 * {@code {"action": "fail-task", "task", "reason"}}. The task is named by its token or key; each leaves an audit
 * entry on the task's hierarchy (refusals included), and the task records the operator as who settled it.
 */
final class TaskActions {
    static final String COMPLETE = "complete-task";
    static final String FAIL = "fail-task";

    private final CoopClient client;

    TaskActions(CoopClient client) {
        this.client = client;
    }

    static boolean handles(String action) {
        return COMPLETE.equals(action) || FAIL.equals(action);
    }

    /** @param refusal why the caller may not take it (audited on the task's hierarchy, then answered), or null */
    ObjectNode take(String action, JsonNode body, String reason, String actor, Actions.Refusal refusal,
            ObjectMapper mapper) {
        JsonNode t = body.get("task");
        if (t == null || !t.isTextual() || t.asText().isBlank()) {
            throw new Handler.BadRequest(400, "Name the task: 'task' is its token or correlation key");
        }
        String task = t.asText().strip();
        TaskView view = client.externalTask(task)
                .orElseThrow(() -> new Handler.BadRequest(404, "No external task has this token or key"));
        JsonNode result = body.get("result");
        if (COMPLETE.equals(action) && (result == null || result.isNull())) {
            throw new Handler.BadRequest(400, "'complete-task' needs a 'result' (any JSON value)");
        }
        MessageId message = new MessageId(view.lineage().getFirst());
        if (refusal != null) {
            client.recordAudit(message, new Lineage(view.lineage()), action, actor,
                    reason == null ? "(none given)" : Reasons.forAudit(reason), "REFUSED: " + refusal.why());
            throw new Handler.BadRequest(refusal.status(), refusal.why());
        }
        String outcome;
        boolean ok = true;
        int status = 409;
        try {
            outcome = (COMPLETE.equals(action)
                    ? client.complete(view.token(), result, actor)
                    : client.fail(view.token(), reason, actor)).name();
        } catch (CoopValidationException e) {
            ok = false;
            status = 400;
            outcome = "REFUSED: " + e.getMessage();
        } catch (TaskRefusedException e) {
            ok = false;
            outcome = "REFUSED: " + e.getMessage();
        }
        AuditEntry entry = client.recordAudit(message, new Lineage(view.lineage()), action, actor, reason,
                outcome.length() > 1_000 ? outcome.substring(0, 1_000) : outcome);
        ObjectNode o = mapper.createObjectNode();
        o.put("ok", ok);
        o.put("outcome", outcome);
        o.put("auditId", entry.id());
        o.put("messageId", message.toString());
        return Actions.notDone(o, status);
    }
}
