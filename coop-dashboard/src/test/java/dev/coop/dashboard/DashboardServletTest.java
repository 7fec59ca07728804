package dev.coop.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.test.CoopDatabase;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The servlet adapter, driven through the servlet API without a container: the container's principal and roles
 * decide who reads and who acts, and actions still need the dashboard's CSRF token.
 */
class DashboardServletTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase(4);

    static DashboardServlet servlet;

    @BeforeAll
    static void start() {
        CoopClient client = Coop.client(db.dataSource());
        servlet = new DashboardServlet(client);
    }

    /** A request as a container would hand it over, and what the servlet answered. */
    static final class Call {
        final Map<String, String> headers = new HashMap<>();
        final Map<String, Object> session = new HashMap<>();
        final Map<String, String> responseHeaders = new HashMap<>();
        final ByteArrayOutputStream body = new ByteArrayOutputStream();
        String method = "GET";
        String path = "/api/session";
        String user;
        Set<String> roles = Set.of();
        String requestBody = "";
        int status = 200;

        Call as(String name, String... roles) {
            this.user = name;
            this.roles = Set.of(roles);
            return this;
        }

        Call run() throws Exception {
            HttpSession httpSession = proxy(HttpSession.class, (name, args) -> switch (name) {
                case "getAttribute" -> session.get((String) args[0]);
                case "setAttribute" -> session.put((String) args[0], args[1]);
                default -> null;
            });
            HttpServletRequest req = proxy(HttpServletRequest.class, (name, args) -> switch (name) {
                case "getMethod" -> method;
                case "getPathInfo" -> path;
                case "getRequestURI" -> "/coop" + (path == null ? "" : path);
                case "getHeader" -> headers.get((String) args[0]);
                case "getParameter" -> null;
                case "getUserPrincipal" -> user == null ? null : (Principal) () -> user;
                case "isUserInRole" -> roles.contains((String) args[0]);
                case "getSession" -> httpSession;
                case "getInputStream" -> input(requestBody);
                default -> null;
            });
            HttpServletResponse resp = proxy(HttpServletResponse.class, (name, args) -> switch (name) {
                case "setStatus" -> status = (Integer) args[0];
                case "setHeader" -> responseHeaders.put((String) args[0], (String) args[1]);
                case "getOutputStream" -> output(body);
                default -> null;
            });
            servlet.service(req, resp);
            return this;
        }

        String body() {
            return body.toString(StandardCharsets.UTF_8);
        }
    }

    @Test
    void a_request_without_a_principal_is_refused() throws Exception {
        Call c = new Call().run();
        assertThat(c.status).isEqualTo(401);
        assertThat(c.responseHeaders).containsEntry("X-Frame-Options", "DENY");
    }

    @Test
    void the_containers_roles_decide_who_reads_and_who_acts() throws Exception {
        assertThat(new Call().as("eve").run().status).as("no dashboard role").isEqualTo(403);
        Call viewer = new Call().as("vic", "COOP_VIEWER").run();
        assertThat(viewer.body()).contains("\"role\":\"VIEWER\"", "\"logout\":false");

        Call act = new Call().as("vic", "COOP_VIEWER");
        act.method = "POST";
        act.path = "/api/action";
        act.headers.put("Content-Type", "application/json");
        act.requestBody = "{\"action\":\"cancel\",\"message\":\"01a20287-0000-7000-8000-000000000000\",\"reason\":\"x\"}";
        assertThat(act.run().status).isEqualTo(403);

        Call operator = new Call().as("olga", "COOP_OPERATOR").run();
        assertThat(operator.body()).contains("\"role\":\"OPERATOR\"");
        Call noToken = new Call().as("olga", "COOP_OPERATOR");
        noToken.session.putAll(operator.session);
        noToken.method = "POST";
        noToken.path = "/api/action";
        noToken.headers.put("Content-Type", "application/json");
        noToken.requestBody = act.requestBody;
        assertThat(noToken.run().status).as("no CSRF token").isEqualTo(403);
        assertThat(noToken.body()).contains("CSRF");

        Call withToken = new Call().as("olga", "COOP_OPERATOR");
        withToken.session.putAll(operator.session);
        withToken.method = "POST";
        withToken.path = "/api/action";
        withToken.headers.put("Content-Type", "application/json");
        withToken.headers.put("X-Coop-Csrf", (String) operator.session.values().iterator().next());
        withToken.requestBody = act.requestBody;
        assertThat(withToken.run().status).as(withToken.body()).isEqualTo(400); // past CSRF: refused, and audited
        assertThat(withToken.body()).contains("\"ok\":false", "REFUSED", "01a20287-0000-7000-8000-000000000000");
    }

    @Test
    void the_page_needs_the_trailing_slash_for_its_relative_links() throws Exception {
        Call c = new Call();
        c.path = null;
        c.run();
        assertThat(c.status).isEqualTo(303);
        assertThat(c.responseHeaders).containsEntry("Location", "/coop/");
    }

    // ---- plumbing

    interface Answer {
        Object apply(String method, Object[] args) throws Exception;
    }

    @SuppressWarnings("unchecked")
    static <T> T proxy(Class<T> type, Answer answer) {
        return (T) Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[]{type},
                (p, m, args) -> answer.apply(m.getName(), args == null ? new Object[0] : args));
    }

    static ServletInputStream input(String body) {
        ByteArrayInputStream in = new ByteArrayInputStream(body.getBytes(StandardCharsets.UTF_8));
        return new ServletInputStream() {
            @Override
            public int read() {
                return in.read();
            }

            @Override
            public boolean isFinished() {
                return in.available() == 0;
            }

            @Override
            public boolean isReady() {
                return true;
            }

            @Override
            public void setReadListener(ReadListener listener) {
            }
        };
    }

    static ServletOutputStream output(ByteArrayOutputStream out) {
        return new ServletOutputStream() {
            @Override
            public void write(int b) {
                out.write(b);
            }

            @Override
            public boolean isReady() {
                return true;
            }

            @Override
            public void setWriteListener(WriteListener listener) {
            }
        };
    }
}
