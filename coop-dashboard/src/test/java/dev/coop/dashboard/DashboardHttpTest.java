package dev.coop.dashboard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.AuditEntry;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The dashboard over HTTP, without a browser: who gets in, who may act, CSRF, headers, bad input. */
class DashboardHttpTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase(8);

    record Greeting(String name) {
    }

    static final Topic<Greeting> GREETING = Topic.of("dash-greeting", Greeting.class);
    static final String OPERATOR_TOKEN = "operator-token-0123456789";
    static final ObjectMapper JSON = new ObjectMapper();

    static CoopEngine engine;
    static CoopClient client;
    static DashboardServer server;
    static final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeAll
    static void start() throws Exception {
        Saga<Greeting> greet = Saga.on(GREETING, "greeter").step("greet", step -> {
        }).build();
        engine = Coop.engine(db.dataSource()).workers(2).register(greet).start();
        client = engine.client();
        server = DashboardServer.builder(client).port(0).user("olga", "operator-pass", Role.OPERATOR)
                .user("vic", "viewer-pass", Role.VIEWER).token(OPERATOR_TOKEN, Role.OPERATOR).start();
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
        if (engine != null) {
            engine.close();
        }
    }

    @Test
    void nobody_gets_in_without_credentials() throws Exception {
        assertThat(get("api/runs", null).statusCode()).isEqualTo(401);
        HttpResponse<String> page = get("", null);
        assertThat(page.statusCode()).isEqualTo(303);
        assertThat(page.headers().firstValue("Location")).hasValue("/login");
        assertThat(login("olga", "wrong-password").headers().firstValue("Location")).hasValue("/login?failed=1");
        assertThat(get("api/runs", "coop_dashboard=made-up").statusCode()).isEqualTo(401);
        assertThat(server.uri().getHost()).isEqualTo("127.0.0.1");
    }

    @Test
    void logging_out_ends_the_session() throws Exception {
        String cookie = session("vic", "viewer-pass");
        String csrf = JSON.readTree(get("api/session", cookie).body()).get("csrf").asText();
        HttpRequest.Builder logout = HttpRequest.newBuilder(server.uri().resolve("logout")).header("Cookie", cookie)
                .POST(HttpRequest.BodyPublishers.noBody());
        assertThat(http.send(logout.build(), HttpResponse.BodyHandlers.ofString()).statusCode()).as("no CSRF token")
                .isEqualTo(403);
        assertThat(http.send(logout.header("X-Coop-Csrf", csrf).build(), HttpResponse.BodyHandlers.ofString())
                .statusCode()).isEqualTo(200);
        assertThat(get("api/session", cookie).statusCode()).isEqualTo(401);
    }

    @Test
    void a_dashboard_without_users_or_tokens_does_not_start() {
        assertThatThrownBy(() -> DashboardServer.builder(client).port(0).start())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("no anonymous access");
        assertThatThrownBy(() -> DashboardServer.builder(client).token("short", Role.OPERATOR))
                .hasMessageContaining("at least 16 characters");
    }

    @Test
    void every_response_carries_the_security_headers() throws Exception {
        for (HttpResponse<String> r : List.of(get("login", null), get("static/app.js", null),
                get("api/session", null))) {
            assertThat(r.headers().firstValue("Content-Security-Policy")).get().asString()
                    .contains("script-src 'self'").contains("frame-ancestors 'none'").doesNotContain("unsafe-inline");
            assertThat(r.headers().firstValue("X-Frame-Options")).hasValue("DENY");
            assertThat(r.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
        }
        assertThat(login("olga", "operator-pass").headers().firstValue("Set-Cookie")).get().asString()
                .contains("HttpOnly").contains("SameSite=Strict");
    }

    @Test
    void a_viewer_reads_but_may_not_act() throws Exception {
        String cookie = session("vic", "viewer-pass");
        JsonNode me = JSON.readTree(get("api/session", cookie).body());
        assertThat(me.get("role").asText()).isEqualTo("VIEWER");
        MessageId id = client.launch(GREETING, new Greeting("ada"));
        assertThat(client.awaitCompletion(id, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
        assertThat(get("api/hierarchy?message=" + id, cookie).statusCode()).isEqualTo(200);
        HttpResponse<String> refused = action(cookie, me.get("csrf").asText(),
                "{\"action\":\"rollback\",\"message\":\"" + id + "\",\"reason\":\"try\"}");
        assertThat(refused.statusCode()).isEqualTo(403);
        assertThat(refused.body()).contains("may only read");
        assertThat(client.audit(id)).as("refused, not taken, and audited").singleElement().satisfies(e -> {
            assertThat(e.actor()).isEqualTo("vic");
            assertThat(e.action()).isEqualTo("rollback");
            assertThat(e.outcome()).startsWith("REFUSED").contains("may only read");
        });
        assertThat(client.statuses(id)).containsExactly(dev.coop.RunStatus.COMMITTED);
    }

    @Test
    void an_operator_action_needs_the_csrf_token_and_a_reason_and_is_audited() throws Exception {
        String cookie = session("olga", "operator-pass");
        String csrf = JSON.readTree(get("api/session", cookie).body()).get("csrf").asText();
        MessageId id = client.launch(GREETING, new Greeting("later"), Instant.now().plusSeconds(3600));
        String body = "{\"action\":\"cancel\",\"message\":\"" + id + "\",\"reason\":\"customer withdrew\"}";
        assertThat(action(cookie, null, body).statusCode()).isEqualTo(403);
        assertThat(action(cookie, "wrong", body).statusCode()).isEqualTo(403);
        HttpResponse<String> crossSite = http.send(HttpRequest.newBuilder(server.uri().resolve("api/action"))
                .header("Cookie", cookie).header("X-Coop-Csrf", csrf).header("Content-Type", "application/json")
                .header("Origin", "http://evil.example").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(crossSite.statusCode()).isEqualTo(403);
        assertThat(client.audit(id)).as("no CSRF token: a forged request writes nothing").isEmpty();
        HttpResponse<String> noReason = action(cookie, csrf, body.replace("customer withdrew", " "));
        assertThat(noReason.statusCode()).isEqualTo(400);
        assertThat(noReason.body()).contains("reason is required");
        HttpResponse<String> forged = action(cookie, csrf, body.replace("customer withdrew",
                "ok\\r\\n2026-01-01 INFO forged\\u001b[2J"));
        assertThat(forged.statusCode()).isEqualTo(400);
        assertThat(forged.body()).contains("control characters");
        assertThat(client.audit(id)).as("refusals are audited, the reason escaped").hasSize(2).allSatisfy(e -> {
            assertThat(e.outcome()).startsWith("REFUSED");
            assertThat(e.reason()).doesNotContain("\r", "\u001b");
        });
        assertThat(client.audit(id).get(1).reason()).contains("\\u000D\\u000A2026-01-01 INFO forged\\u001B[2J");

        HttpResponse<String> done = action(cookie, csrf, body);
        assertThat(done.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(done.body()).get("outcome").asText()).isEqualTo("REQUESTED");
        assertThat(client.awaitCompletion(id, Duration.ofSeconds(30))).isEqualTo(Outcome.ROLLED_BACK);
        List<AuditEntry> audit = client.audit(id).stream().filter(e -> !e.outcome().startsWith("REFUSED")).toList();
        assertThat(audit).singleElement().satisfies(e -> {
            assertThat(e.actor()).isEqualTo("olga");
            assertThat(e.action()).isEqualTo("cancel");
            assertThat(e.reason()).isEqualTo("customer withdrew");
            assertThat(e.outcome()).isEqualTo("REQUESTED");
        });
        JsonNode page = JSON.readTree(get("api/hierarchy?message=" + id, cookie).body());
        assertThat(page.get("audit").get(0).get("actor").asText()).isEqualTo("olga");
    }

    @Test
    void no_action_is_taken_where_it_could_not_be_audited() throws Exception {
        CoopClient old = CoopClient.builder(db.dataSource()).schema("dash_unmigrated").build();
        try (java.sql.Connection c = db.dataSource().getConnection();
                java.sql.Statement st = c.createStatement()) {
            st.execute("DROP TABLE dash_unmigrated.audit"); // as a schema from before the audit table
        }
        try (DashboardServer unaudited = DashboardServer.builder(old).port(0).token(OPERATOR_TOKEN, Role.OPERATOR)
                .start()) {
            String id = "01a20287-0000-7000-8000-000000000001";
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(unaudited.uri().resolve("api/action"))
                    .header("Authorization", "Bearer " + OPERATOR_TOKEN).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(
                            "{\"action\":\"cancel\",\"message\":\"" + id + "\",\"reason\":\"x\"}"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(r.body()).contains("cannot be audited", "coop migrate");
        }
    }

    @Test
    void a_script_with_a_bearer_token_needs_no_csrf_token() throws Exception {
        MessageId id = client.launch(GREETING, new Greeting("later"), Instant.now().plusSeconds(3600));
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(server.uri().resolve("api/action"))
                .header("Authorization", "Bearer " + OPERATOR_TOKEN).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"action\":\"cancel\",\"message\":\"" + id + "\",\"reason\":\"scripted\"}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(client.audit(id)).extracting(AuditEntry::actor).containsExactly("token-1");
    }

    @Test
    void bad_input_is_refused_naming_the_value() throws Exception {
        String cookie = session("vic", "viewer-pass");
        HttpResponse<String> r = get("api/hierarchy?message=not-an-id", cookie);
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("not-an-id");
        assertThat(get("api/runs?status=SLEEPING", cookie).body()).contains("SLEEPING");
        assertThat(get("api/runs?limit=5000", cookie).statusCode()).isEqualTo(400);
        assertThat(get("api/nothing", cookie).statusCode()).isEqualTo(404);
        assertThat(get("static/../pom.xml", cookie).statusCode()).isEqualTo(404);
    }

    @Test
    void values_postgresql_cannot_take_are_refused_with_400_naming_the_parameter_never_a_5xx() throws Exception {
        String cookie = session("vic", "viewer-pass");
        for (String query : List.of("api/runs?since=%2B999999999-12-31T23:59:59Z",
                "api/runs?before=-999999999-01-01T00:00:00Z", "api/runs?topic=%00", "api/runs?saga=a%00b",
                "api/joins?key=%00", "api/joins?key=a%00")) {
            HttpResponse<String> r = get(query, cookie);
            assertThat(r.statusCode()).as(query).isEqualTo(400);
            assertThat(r.body()).as(query).containsAnyOf("RunQuery.", "Joins.byKey").doesNotContain("ERROR:", "PSQL",
                    "postgres");
        }
        HttpResponse<String> east = get("api/runs?since=2020-01-01T00:00:00%2B18:00", cookie);
        assertThat(east.statusCode()).as("+18:00 is an instant like any other").isEqualTo(200);
    }

    @Test
    void an_action_on_a_lineage_that_mixes_two_hierarchies_is_refused_and_audited_under_the_named_one()
            throws Exception {
        MessageId a = client.launch(GREETING, new Greeting("a"));
        MessageId b = client.launch(GREETING, new Greeting("b"));
        client.awaitCompletion(a, Duration.ofSeconds(30));
        client.awaitCompletion(b, Duration.ofSeconds(30));
        String runOfB = client.tree(b).runs().getFirst().runId().toString();
        for (String action : List.of("mark-done", "retry", "rollback")) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(server.uri().resolve("api/action"))
                    .header("Authorization", "Bearer " + OPERATOR_TOKEN).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"action\":\"" + action + "\",\"lineage\":[\"" + a
                            + "\",\"" + runOfB + "\"],\"reason\":\"try\"}"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as("a refusal is a 4xx, not 200 with ok:false").isEqualTo(400);
            assertThat(JSON.readTree(r.body()).get("outcome").asText()).as(action).startsWith("REFUSED")
                    .contains("does not name a run");
            assertThat(JSON.readTree(r.body()).get("error").asText()).contains("does not name a run");
        }
        assertThat(client.audit(a)).hasSize(3).allSatisfy(e -> assertThat(e.outcome()).startsWith("REFUSED"));
        assertThat(client.audit(b)).as("nothing happened to b").isEmpty();
        assertThat(client.statuses(b)).containsExactly(dev.coop.RunStatus.COMMITTED);
    }

    @Test
    void a_login_name_with_line_breaks_and_escapes_cannot_forge_a_log_line() throws Exception {
        java.io.PrintStream original = System.err;
        java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            login("mallory\r\n[main] INFO dev.coop.dashboard - Dashboard login: admin (OPERATOR)\u001b[2J", "guess");
        } finally {
            System.setErr(original);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        assertThat(log).contains("Dashboard login refused for 'mallory\\u000D\\u000A[main] INFO");
        assertThat(log.lines().filter(l -> l.contains("Dashboard login: admin"))).allMatch(l -> l.contains("refused"));
        assertThat(log).doesNotContain("\u001b");
    }

    @Test
    void runs_are_listed_with_counts_by_status() throws Exception {
        MessageId id = client.launch(GREETING, new Greeting("grace"));
        client.awaitCompletion(id, Duration.ofSeconds(30));
        JsonNode page = JSON.readTree(get("api/runs?saga=greeter", "").body().isEmpty()
                ? "{}"
                : get("api/runs?saga=greeter", session("vic", "viewer-pass")).body());
        assertThat(page.get("runs").size()).isPositive();
        assertThat(page.get("counts").get("COMMITTED").asLong()).isPositive();
    }

    @Test
    void a_selection_is_acted_on_by_operators_only_and_counts_are_read_per_saga_and_minute() throws Exception {
        MessageId later = client.launch(GREETING, new Greeting("selected"), Instant.now().plusSeconds(3600));
        String body = "{\"action\":\"cancel-selection\",\"selection\":{\"saga\":\"greeter\",\"status\":"
                + "\"RUNNABLE\"},\"reason\":\"the greetings are off\"}";
        String vic = session("vic", "viewer-pass");
        HttpResponse<String> viewer = action(vic, JSON.readTree(get("api/session", vic).body()).get("csrf").asText(),
                body);
        assertThat(viewer.statusCode()).isEqualTo(403);
        assertThat(client.statuses(later)).containsExactly(dev.coop.RunStatus.RUNNABLE);
        HttpResponse<String> noSelection = http.send(HttpRequest.newBuilder(server.uri().resolve("api/action"))
                .header("Authorization", "Bearer " + OPERATOR_TOKEN).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"action\":\"rollback-selection\",\"reason\":\"why not\"}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(noSelection.statusCode()).isEqualTo(400);
        assertThat(noSelection.body()).contains("'selection'");

        HttpResponse<String> r = http.send(HttpRequest.newBuilder(server.uri().resolve("api/action"))
                .header("Authorization", "Bearer " + OPERATOR_TOKEN).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(JSON.readTree(r.body()).get("acted").asLong()).isPositive();
        assertThat(client.awaitCompletion(later, Duration.ofSeconds(30))).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(client.audit(later)).singleElement().satisfies(a -> {
            assertThat(a.action()).isEqualTo("cancel-selection");
            assertThat(a.actor()).isEqualTo("token-1");
        });

        JsonNode counts = JSON.readTree(get("api/counts?minutes=60", session("vic", "viewer-pass")).body());
        assertThat(counts.get("minutes").asInt()).isEqualTo(60);
        assertThat(counts.get("counts").findValuesAsText("saga")).contains("greeter");
        assertThat(get("api/counts?minutes=0", session("vic", "viewer-pass")).statusCode()).isEqualTo(400);
    }

    @Test
    void schedules_and_joins_are_listed() throws Exception {
        client.schedule("dash-nightly", GREETING, new Greeting("night"), dev.coop.schedule.Schedule.cron("0 3 * * *"));
        dev.coop.join.JoinId join = client.joins().start(dev.coop.join.JoinSpec.expecting(2).key("dash-batch-7")
                .onComplete(Topic.of("dash-batch-done", dev.coop.join.JoinResult.class))
                .onFail(Topic.of("dash-batch-failed", dev.coop.join.JoinResult.class)));
        client.joins().attach(join, client.launch(GREETING, new Greeting("member"), Instant.now().plusSeconds(3600)));
        String cookie = session("vic", "viewer-pass");
        JsonNode schedules = JSON.readTree(get("api/schedules", cookie).body());
        assertThat(schedules.findValuesAsText("name")).contains("dash-nightly");
        assertThat(schedules.get(0).get("nextDue").isNull()).isFalse();
        JsonNode joins = JSON.readTree(get("api/joins?key=dash-batch-7", cookie).body());
        assertThat(joins.get(0).get("expected").asInt()).isEqualTo(2);
        assertThat(joins.get(0).get("members").get(0).get("state").asText()).isEqualTo("PENDING");
        assertThat(JSON.readTree(get("api/joins?id=" + join, cookie).body()).get(0).get("key").asText())
                .isEqualTo("dash-batch-7");
        assertThat(get("api/joins", cookie).statusCode()).isEqualTo(400);
    }

    // ---- helpers

    static HttpResponse<String> get(String path, String cookie) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(server.uri().resolve(path)).GET();
        if (cookie != null && !cookie.isEmpty()) {
            b.header("Cookie", cookie);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> login(String user, String password) throws Exception {
        String form = "user=" + URLEncoder.encode(user, StandardCharsets.UTF_8) + "&password="
                + URLEncoder.encode(password, StandardCharsets.UTF_8);
        return http.send(HttpRequest.newBuilder(server.uri().resolve("login"))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form)).build(), HttpResponse.BodyHandlers.ofString());
    }

    static String session(String user, String password) throws Exception {
        HttpResponse<String> r = login(user, password);
        assertThat(r.statusCode()).isEqualTo(303);
        String cookie = r.headers().firstValue("Set-Cookie").orElseThrow();
        return cookie.substring(0, cookie.indexOf(';'));
    }

    static HttpResponse<String> action(String cookie, String csrf, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(server.uri().resolve("api/action")).header("Cookie", cookie)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        if (csrf != null) {
            b.header("X-Coop-Csrf", csrf);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }
}
