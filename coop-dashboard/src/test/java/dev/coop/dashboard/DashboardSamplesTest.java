package dev.coop.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.test.CoopDatabase;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletRegistration;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The samples of docs/dashboard.md, compiled (and the standalone one run). */
class DashboardSamplesTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase(4);

    static DashboardServer standalone(CoopClient client, int port, String alicePassword, String bobPassword,
            String operatorToken) throws IOException {
        // tag::dashboard-standalone[]
        DashboardServer server = DashboardServer.builder(client)
                .port(port) // binds 127.0.0.1 unless .bind("0.0.0.0")
                .user("alice", alicePassword, Role.OPERATOR)
                .user("bob", bobPassword, Role.VIEWER)
                .token(operatorToken, Role.OPERATOR) // for scripts: Authorization: Bearer <token>
                .start();
        // end::dashboard-standalone[]
        return server;
    }

    /** Mounted by hand in a servlet container; Spring Boot's ServletRegistrationBean takes the same arguments. */
    static void mount(ServletContext servletContext, CoopClient client) {
        // tag::dashboard-servlet[]
        ServletRegistration.Dynamic dashboard = servletContext.addServlet("coop-dashboard",
                new DashboardServlet(client, "COOP_OPERATOR", "COOP_VIEWER"));
        dashboard.addMapping("/coop/*");
        // end::dashboard-servlet[]
    }

    @Test
    void the_standalone_sample_serves_its_users() throws Exception {
        CoopClient client = Coop.client(db.dataSource());
        try (DashboardServer server = standalone(client, 0, "alice-secret", "bob-secret",
                "a-token-of-sixteen-chars")) {
            HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    server.uri().resolve("api/session")).header("Authorization", "Bearer a-token-of-sixteen-chars")
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.body()).contains("\"role\":\"OPERATOR\"");
        }
    }
}
