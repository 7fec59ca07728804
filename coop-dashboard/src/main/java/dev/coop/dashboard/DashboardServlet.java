package dev.coop.dashboard;

import dev.coop.CoopClient;
import dev.coop.dashboard.internal.Assets;
import dev.coop.dashboard.internal.Caller;
import dev.coop.dashboard.internal.Exchange;
import dev.coop.dashboard.internal.Handler;
import dev.coop.dashboard.internal.Responses;
import dev.coop.dashboard.internal.Sessions;
import dev.coop.render.JsonMask;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import java.io.IOException;
import java.io.InputStream;
import java.io.Serial;
import java.security.Principal;
import java.util.Objects;

/**
 * The dashboard as a servlet, for an application's own container (Spring Boot, Jetty, Tomcat). Map it to a path
 * with a wildcard ({@code /coop/*}); authentication is the container's (Spring Security, say): a request without a
 * principal is refused with 401, a principal in {@code operatorRole} may act, one in {@code viewerRole} may read
 * (a null viewer role lets every authenticated principal read). Actions carry a CSRF token of the dashboard's own,
 * kept in the HTTP session.
 *
 * <pre>{@code
 * @Bean
 * ServletRegistrationBean<DashboardServlet> coopDashboard(CoopClient client) {
 *     return new ServletRegistrationBean<>(new DashboardServlet(client, "COOP_OPERATOR", "COOP_VIEWER"), "/coop/*");
 * }
 * }</pre>
 */
public class DashboardServlet extends HttpServlet {
    @Serial
    private static final long serialVersionUID = 1L;
    private static final String CSRF_ATTRIBUTE = DashboardServlet.class.getName() + ".csrf";

    private final transient Handler handler;
    private final String operatorRole;
    private final String viewerRole;

    /** Operators in role {@code COOP_OPERATOR}, readers in {@code COOP_VIEWER}. */
    public DashboardServlet(CoopClient client) {
        this(client, "COOP_OPERATOR", "COOP_VIEWER");
    }

    public DashboardServlet(CoopClient client, String operatorRole, String viewerRole) {
        this(client, operatorRole, viewerRole, JsonMask.NONE);
    }

    /**
     * @param mask the fields whose values payloads, results and context values show as {@code ***}
     *        ({@code JsonMask.of(List.of("password", "*token*"))})
     */
    public DashboardServlet(CoopClient client, String operatorRole, String viewerRole, JsonMask mask) {
        this.handler = new Handler(Objects.requireNonNull(client, "client"), false, mask);
        this.operatorRole = Objects.requireNonNull(operatorRole, "operatorRole");
        this.viewerRole = viewerRole;
    }

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        Exchange ex = new ServletExchange(req, resp);
        Responses.secure(ex);
        if (req.getPathInfo() == null && !req.getRequestURI().endsWith("/")) {
            Responses.redirect(ex, req.getRequestURI() + "/"); // relative links need the trailing slash
            return;
        }
        if (Assets.serve(ex, ex.path())) {
            return;
        }
        Principal principal = req.getUserPrincipal();
        if (principal == null) {
            Responses.error(ex, 401, "Log in first");
            return;
        }
        Role role;
        if (req.isUserInRole(operatorRole)) {
            role = Role.OPERATOR;
        } else if (viewerRole == null || req.isUserInRole(viewerRole)) {
            role = Role.VIEWER;
        } else {
            Responses.error(ex, 403, "User '" + principal.getName() + "' has neither role " + operatorRole + " nor "
                    + viewerRole);
            return;
        }
        handler.handle(ex, new Caller(principal.getName(), role, csrf(req.getSession(true))));
    }

    private static String csrf(HttpSession session) {
        synchronized (session) {
            Object token = session.getAttribute(CSRF_ATTRIBUTE);
            if (token == null) {
                token = Sessions.random();
                session.setAttribute(CSRF_ATTRIBUTE, token);
            }
            return (String) token;
        }
    }

    /** {@link Exchange} over the servlet API. */
    private record ServletExchange(HttpServletRequest req, HttpServletResponse resp) implements Exchange {
        @Override
        public String method() {
            return req.getMethod();
        }

        @Override
        public String path() {
            String p = req.getPathInfo();
            return p == null ? "/" : p;
        }

        @Override
        public String query(String name) {
            return req.getParameter(name);
        }

        @Override
        public String remoteAddress() {
            return req.getRemoteAddr();
        }

        @Override
        public String header(String name) {
            return req.getHeader(name);
        }

        @Override
        public byte[] body(int max) throws IOException {
            try (InputStream in = req.getInputStream()) {
                byte[] b = in.readNBytes(max + 1);
                if (b.length > max) {
                    throw Handler.tooLarge(max);
                }
                return b;
            }
        }

        @Override
        public void responseHeader(String name, String value) {
            resp.setHeader(name, value);
        }

        @Override
        public void send(int status, String contentType, byte[] body) throws IOException {
            resp.setStatus(status);
            resp.setContentType(contentType);
            resp.setContentLength(body.length);
            if (!req.getMethod().equals("HEAD")) {
                resp.getOutputStream().write(body);
            }
        }
    }
}
