package dev.coop.spring.security;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.spring.docs.DashboardSecuritySample;
import dev.coop.test.CoopPostgres;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The dashboard in a Spring Boot web application behind the documented {@code SecurityFilterChain}
 * ({@link DashboardSecuritySample}): anonymous requests are refused, a COOP_VIEWER reads and may not act, a
 * COOP_OPERATOR acts with the dashboard's own CSRF token, Spring Security's CSRF filter skipping /coop/**.
 */
@SpringBootTest(classes = DashboardSecurityTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "coop.engine.enabled=false", "coop.dashboard.enabled=true"})
class DashboardSecurityTest {
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(DashboardSecuritySample.class)
    static class App {
        @Bean
        InMemoryUserDetailsManager users() {
            return new InMemoryUserDetailsManager(
                    User.withUsername("olga").password("{noop}operator-pass").roles("COOP_OPERATOR").build(),
                    User.withUsername("vic").password("{noop}viewer-pass").roles("COOP_VIEWER").build(),
                    User.withUsername("eve").password("{noop}other-pass").roles("SALES").build());
        }
    }

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        CoopPostgres server = CoopPostgres.shared();
        String database = server.createDatabase("spring_dashboard_security");
        registry.add("spring.datasource.url", () -> server.jdbcUrl(database));
        registry.add("spring.datasource.username", server::user);
        registry.add("spring.datasource.password", server::password);
    }

    @LocalServerPort
    int port;

    final HttpClient http = HttpClient.newHttpClient();
    static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void viewers_read_operators_act_and_everyone_else_is_refused() throws Exception {
        assertThat(get("/coop/api/session", null).statusCode()).as("anonymous").isEqualTo(401);
        assertThat(get("/coop/api/session", basic("eve", "other-pass")).statusCode()).as("another role")
                .isEqualTo(403);

        HttpResponse<String> viewer = get("/coop/api/session", basic("vic", "viewer-pass"));
        assertThat(viewer.statusCode()).as(viewer.body()).isEqualTo(200);
        assertThat(JSON.readTree(viewer.body()).get("role").asText()).isEqualTo("VIEWER");
        assertThat(action(viewer, basic("vic", "viewer-pass")).statusCode()).as("a viewer's action").isEqualTo(403);

        HttpResponse<String> operator = get("/coop/api/session", basic("olga", "operator-pass"));
        assertThat(JSON.readTree(operator.body()).get("role").asText()).isEqualTo("OPERATOR");
        HttpResponse<String> acted = action(operator, basic("olga", "operator-pass"));
        assertThat(acted.statusCode()).as("past both CSRF checks: " + acted.body()).isNotIn(401, 403);
        assertThat(acted.body()).contains("outcome");
        assertThat(get("/coop/", basic("vic", "viewer-pass")).body()).contains("<html");
    }

    /** A cancel of a message no saga handles, with the CSRF token and cookie of {@code session}. */
    private HttpResponse<String> action(HttpResponse<String> session, String authorization) throws Exception {
        JsonNode s = JSON.readTree(session.body());
        String cookie = session.headers().firstValue("Set-Cookie").map(c -> c.split(";")[0]).orElse("");
        String body = "{\"action\":\"cancel\",\"message\":\"" + UUID.randomUUID() + "\",\"reason\":\"a test\"}";
        HttpRequest.Builder b = HttpRequest.newBuilder(uri("/coop/api/action")).header("Authorization", authorization)
                .header("Content-Type", "application/json").header("X-Coop-Csrf", s.path("csrf").asText(""))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (!cookie.isEmpty()) {
            b.header("Cookie", cookie);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(path)).GET();
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port + path);
    }

    private static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }
}
