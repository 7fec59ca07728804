package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopClient;
import dev.coop.inspect.RunQuery;

/**
 * Cancel or roll back the runs the run list's filters select ({@code "selection": {"saga", "status", "topic",
 * "since", "before", "failureType"}}), in batches ({@link CoopClient#cancel(RunQuery, String, String)},
 * {@link CoopClient#rollback(RunQuery, String, String)}); each hierarchy is audited as it is acted on. The page
 * states the count it confirmed; the answer says how many runs were acted on.
 */
final class SelectionActions {
    static final String CANCEL = "cancel-selection";
    static final String ROLLBACK = "rollback-selection";

    private final CoopClient client;

    SelectionActions(CoopClient client) {
        this.client = client;
    }

    static boolean handles(String action) {
        return CANCEL.equals(action) || ROLLBACK.equals(action);
    }

    ObjectNode take(String action, JsonNode body, String actor, String reason, ObjectMapper mapper) {
        RunQuery selection = selection(body.get("selection"));
        long acted = CANCEL.equals(action)
                ? client.cancel(selection, actor, reason)
                : client.rollback(selection, actor, reason);
        ObjectNode o = mapper.createObjectNode();
        o.put("ok", true);
        o.put("outcome", "REQUESTED for " + acted + " run(s)");
        o.put("acted", acted);
        return o;
    }

    private static RunQuery selection(JsonNode s) {
        if (s == null || !s.isObject()) {
            throw new Handler.BadRequest(400, "Which runs? 'selection' holds the run list's filters (saga, status,"
                    + " topic, since, before, failureType)");
        }
        RunQuery q = RunQuery.newest();
        String saga = Actions.text(s, "saga");
        q = saga == null ? q : q.saga(saga);
        String topic = Actions.text(s, "topic");
        q = topic == null ? q : q.topic(topic);
        String status = Actions.text(s, "status");
        q = status == null ? q : q.status(Params.status(status));
        String since = Actions.text(s, "since");
        q = since == null ? q : q.since(Params.time("since", since));
        String before = Actions.text(s, "before");
        q = before == null ? q : q.before(Params.time("before", before));
        String failureType = Actions.text(s, "failureType");
        return failureType == null ? q : q.failureType(failureType);
    }
}
