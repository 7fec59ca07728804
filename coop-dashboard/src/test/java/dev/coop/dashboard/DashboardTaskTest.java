package dev.coop.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.TaskOptions;
import dev.coop.TaskState;
import dev.coop.Topic;
import dev.coop.inspect.AuditEntry;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Open external tasks on the dashboard; operators complete or fail them, audited; viewers may only look. */
class DashboardTaskTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    record Request(String id) {
    }

    static final Duration WAIT = Duration.ofSeconds(30);
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @Test
    void operators_complete_and_fail_open_tasks_and_each_action_is_audited(DataSource dataSource) throws Exception {
        Topic<Request> topic = Topic.of("dash-tasks", Request.class);
        Saga<Request> saga = Saga.on(topic, "dash-tasks-saga")
                .step("ask", step -> step.openTask("approval", step.payload(),
                        TaskOptions.none().key("approval/" + step.payload().id())))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(saga).start();
                DashboardServer server = DashboardServer.builder(engine.client()).port(0)
                        .token("operator-token-0123456789", Role.OPERATOR)
                        .token("viewer-token-0123456789", Role.VIEWER).start()) {
            CoopClient client = engine.client();
            MessageId yes = client.launch(topic, new Request("1"));
            MessageId no = client.launch(topic, new Request("2"));
            Await.until("open", WAIT, () -> client.openTasks(10).size() == 2);

            JsonNode tasks = JSON.readTree(get(server, "api/tasks", "viewer-token-0123456789").body());
            assertThat(tasks.get("tasks")).hasSize(2);
            assertThat(tasks.get("tasks").get(0).get("name").asText()).isEqualTo("approval");
            assertThat(tasks.get("openByName").get("approval").asInt()).isEqualTo(2);

            String complete = "{\"action\":\"complete-task\",\"task\":\"approval/1\",\"result\":\"approved\","
                    + "\"reason\":\"called the manager\"}";
            assertThat(post(server, complete, "viewer-token-0123456789").statusCode()).isEqualTo(403);
            HttpResponse<String> done = post(server, complete, "operator-token-0123456789");
            assertThat(done.statusCode()).isEqualTo(200);
            assertThat(done.body()).contains("\"outcome\":\"SETTLED\"");
            HttpResponse<String> again = post(server, complete.replace("approved", "rejected"),
                    "operator-token-0123456789");
            assertThat(again.statusCode()).as("settled already: refused with 409").isEqualTo(409);
            assertThat(again.body()).contains("\"ok\":false", "REFUSED");
            assertThat(post(server, "{\"action\":\"fail-task\",\"task\":\"approval/2\",\"reason\":\"budget\"}",
                    "operator-token-0123456789").body()).contains("SETTLED");

            assertThat(client.awaitCompletion(yes, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(no, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.externalTask("approval/2").orElseThrow().state()).isEqualTo(TaskState.FAILED);
            // the viewer's attempt, refused, is audited too (on the task's hierarchy), before the operator's two
            assertThat(client.audit(yes)).extracting(AuditEntry::action)
                    .containsExactly("complete-task", "complete-task", "complete-task");
            assertThat(client.audit(yes).getFirst().outcome()).startsWith("REFUSED").contains("OPERATOR role");
            assertThat(client.audit(yes).get(1).reason()).isEqualTo("called the manager");
            assertThat(client.audit(yes).get(1).outcome()).isEqualTo("SETTLED");
            assertThat(client.audit(no)).extracting(AuditEntry::outcome).containsExactly("SETTLED");

            // the search box finds every hierarchy by an external task's key, a business key or a tag, newest first
            assertThat(JSON.readTree(get(server, "api/find?q=approval/1", "viewer-token-0123456789").body())
                    .get("matches").get(0).get("messageId").asText()).isEqualTo(yes.toString());
            MessageId keyed = client.launch(topic, new Request("3"),
                    dev.coop.LaunchOptions.none().businessKey("order/3").tags("vip"));
            MessageId newer = client.launch(topic, new Request("4"),
                    dev.coop.LaunchOptions.none().businessKey("order/3"));
            JsonNode byKey = JSON.readTree(get(server, "api/find?q=order/3", "viewer-token-0123456789").body());
            assertThat(byKey.get("matches")).extracting(m -> m.get("messageId").asText())
                    .containsExactly(newer.toString(), keyed.toString());
            assertThat(byKey.get("matches").get(0).get("matchedBy").asText()).isEqualTo("business key");
            JsonNode firstPage = JSON.readTree(get(server, "api/search?q=order/3&limit=1",
                    "viewer-token-0123456789").body());
            assertThat(firstPage.get("matches")).extracting(m -> m.get("messageId").asText())
                    .containsExactly(newer.toString());
            JsonNode secondPage = JSON.readTree(get(server, "api/search?q=order/3&limit=1&before="
                    + java.net.URLEncoder.encode(firstPage.get("next").asText(),
                            java.nio.charset.StandardCharsets.UTF_8),
                    "viewer-token-0123456789").body());
            assertThat(secondPage.get("matches")).extracting(m -> m.get("messageId").asText())
                    .containsExactly(keyed.toString());
            assertThat(JSON.readTree(get(server, "api/search?q=vip", "viewer-token-0123456789").body())
                    .get("matches")).extracting(m -> m.get("matchedBy").asText()).containsExactly("tag");
            assertThat(JSON.readTree(get(server, "api/find?q=nothing-here", "viewer-token-0123456789").body())
                    .get("matches")).isEmpty();
            // a NUL cannot reach PostgreSQL: 400 naming the parameter, not 503
            HttpResponse<String> nul = get(server, "api/runs?key=a%00b", "viewer-token-0123456789");
            assertThat(nul.statusCode()).isEqualTo(400);
            assertThat(nul.body()).contains("'key'", "control characters");
            assertThat(get(server, "api/runs?tag=a%00b", "viewer-token-0123456789").body()).contains("'tag'");
            assertThat(get(server, "api/search?q=a%00b", "viewer-token-0123456789").statusCode()).isEqualTo(400);
            assertThat(get(server, "api/runs?key=order/3", "viewer-token-0123456789").body())
                    .contains(keyed.toString());
        }
    }

    static HttpResponse<String> get(DashboardServer server, String path, String token) throws Exception {
        return http.send(HttpRequest.newBuilder(server.uri().resolve(path)).header("Authorization", "Bearer " + token)
                .GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> post(DashboardServer server, String body, String token) throws Exception {
        return http.send(HttpRequest.newBuilder(server.uri().resolve("api/action"))
                .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }
}
