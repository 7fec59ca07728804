package dev.coop.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code api/io}: a run's payload and result, with the declared fields masked, cut until the whole is asked for. */
class DashboardInputOutputTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    record Signup(String email, String password, String notes) {
    }

    record Account(String id, String apiToken) {
    }

    static final Topic<Signup> SIGNUP = Topic.of("io-signup", Signup.class);
    static final String TOKEN = "operator-token-0123456789";
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @Test
    void payload_and_result_are_shown_with_masked_fields_and_long_values_cut() throws Exception {
        Saga<Signup> saga = Saga.on(SIGNUP, "io-signup-saga")
                .step("open", step -> step.setResult(new Account("acc-1", "tok-secret")))
                .build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(saga).start();
                DashboardServer server = DashboardServer.builder(engine.client()).port(0)
                        .token(TOKEN, Role.VIEWER).fromEnvironment(Map.of("COOP_DASHBOARD_MASK", "password,*token*"))
                        .start()) {
            MessageId id = engine.client().launch(SIGNUP, new Signup("ann@example.com", "hunter22", "x".repeat(10)));
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(20))).isEqualTo(Outcome.COMMITTED);
            UUID run = engine.client().tree(id).runs().getFirst().runId();

            JsonNode io = get(server, "api/io?message=" + id + "&run=" + run);
            assertThat(io.get("payload").get("email").asText()).isEqualTo("ann@example.com");
            assertThat(io.get("payload").get("password").asText()).isEqualTo("***");
            assertThat(io.get("result")).isEqualTo(JSON.readTree("{\"id\":\"acc-1\",\"apiToken\":\"***\"}"));
            assertThat(io.get("payloadCut").asBoolean()).isFalse();

            MessageId big = engine.client().launch(SIGNUP, new Signup("bob@example.com", "pw", "y".repeat(10_000)));
            assertThat(engine.client().awaitCompletion(big, Duration.ofSeconds(20))).isEqualTo(Outcome.COMMITTED);
            JsonNode cut = get(server, "api/io?message=" + big);
            assertThat(cut.get("payloadCut").asBoolean()).isTrue();
            assertThat(cut.get("payload").asText()).hasSize(4_000).doesNotContain("\"pw\"");
            assertThat(cut.get("payloadChars").asInt()).isGreaterThan(10_000);
            assertThat(cut.get("result").isNull()).isTrue();
            JsonNode whole = get(server, "api/io?message=" + big + "&full=true");
            assertThat(whole.get("payload").get("notes").asText()).hasSize(10_000);
            assertThat(whole.get("payload").get("password").asText()).isEqualTo("***");
        }
    }

    private static JsonNode get(DashboardServer server, String path) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(server.uri().resolve(path))
                .header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }
}
