package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopClient;
import dev.coop.inspect.TaskView;
import dev.coop.join.JoinId;
import dev.coop.join.JoinView;
import dev.coop.schedule.ScheduleSummary;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** What the dashboard shows beside runs: schedules, joins and external tasks. */
final class OutsideViews {
    private final CoopClient client;
    private final ObjectMapper mapper;

    OutsideViews(CoopClient client, ObjectMapper mapper) {
        this.client = client;
        this.mapper = mapper;
    }

    ArrayNode schedules() {
        ArrayNode a = mapper.createArrayNode();
        for (ScheduleSummary s : client.schedules()) {
            ObjectNode o = a.addObject();
            o.put("name", s.name());
            o.put("topic", s.topic());
            o.put("schedule", s.schedule().toString());
            o.put("paused", s.paused());
            o.put("nextDue", JsonText.str(s.nextDue()));
            o.put("lastDue", JsonText.str(s.lastDue()));
            o.put("lastFiredAt", JsonText.str(s.lastFiredAt()));
            o.put("lastMessage", s.lastMessage() == null ? null : s.lastMessage().toString());
            o.put("skipped", s.skipped());
            o.put("payload", s.payloadJson());
        }
        return a;
    }

    ArrayNode joins(Exchange ex) {
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
            throw new Handler.BadRequest(400, "Name a join: ?id=<join id> or ?key=<key>");
        }
        ArrayNode a = mapper.createArrayNode();
        for (JoinView v : views) {
            join(a.addObject(), v);
        }
        return a;
    }

    private static void join(ObjectNode o, JoinView v) {
        o.put("id", v.id().toString());
        o.put("key", v.key());
        o.put("status", v.status().name());
        o.put("expected", v.expected());
        o.put("attached", v.attached());
        o.put("completed", v.completed());
        o.put("failed", v.failed());
        o.put("onCompleteTopic", v.onCompleteTopic());
        o.put("onFailTopic", v.onFailTopic());
        o.put("timeoutAt", JsonText.str(v.timeoutAt()));
        o.put("createdAt", JsonText.str(v.createdAt()));
        o.put("finishedAt", JsonText.str(v.finishedAt()));
        o.put("outcomeMessage", v.outcomeMessage() == null ? null : v.outcomeMessage().toString());
        ArrayNode members = o.putArray("members");
        for (JoinView.Member m : v.members()) {
            ObjectNode mo = members.addObject();
            mo.put("message", m.message().toString());
            mo.put("state", m.state().name());
            mo.put("reported", m.reported());
            mo.put("attachedAt", JsonText.str(m.attachedAt()));
            mo.put("settledAt", JsonText.str(m.settledAt()));
        }
    }

    /** Open external tasks, oldest first ({@code ?name=}, {@code ?limit=}), or one by {@code ?task=} token or key. */
    ObjectNode tasks(Exchange ex) {
        String task = Params.text(ex, "task");
        List<TaskView> tasks = task != null
                ? client.externalTask(task).stream().toList()
                : client.openTasks(Params.text(ex, "name"), (int) Params.integer(ex, "limit", 100, 1, 10_000));
        ObjectNode o = mapper.createObjectNode();
        ArrayNode list = o.putArray("tasks");
        Instant now = client.now();
        for (TaskView t : tasks) {
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
            n.put("ageSeconds", Math.max(0, Duration.between(t.createdAt(), now).toSeconds()));
            n.put("deadline", t.deadline().map(Object::toString).orElse(null));
            n.put("settledBy", t.settledBy().orElse(null));
            n.put("failure", t.failure().orElse(null));
        }
        ObjectNode counts = o.putObject("openByName");
        client.openTaskCounts().forEach(c -> counts.put(c.name(), c.open()));
        return o;
    }
}
