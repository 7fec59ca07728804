package dev.coop.dashboard;

import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.coop.CoopClient;
import dev.coop.dashboard.internal.Accounts;
import dev.coop.dashboard.internal.Assets;
import dev.coop.dashboard.internal.Caller;
import dev.coop.dashboard.internal.Handler;
import dev.coop.dashboard.internal.HttpExchange;
import dev.coop.dashboard.internal.Responses;
import dev.coop.dashboard.internal.Sessions;
import dev.coop.render.JsonMask;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The dashboard as a standalone web server on the JDK's HTTP server: no container, no extra dependency. It binds
 * 127.0.0.1 unless told otherwise and lets nobody in without a configured user (password) or token; users log in on
 * a form and get a session cookie ({@code HttpOnly}, {@code SameSite=Strict}) with its own CSRF token, scripts send
 * {@code Authorization: Bearer <token>} or basic credentials.
 *
 * <pre>{@code
 * DashboardServer server = DashboardServer.builder(client)
 *         .port(8080)
 *         .user("alice", System.getenv("ALICE_PASSWORD"), Role.OPERATOR)
 *         .user("bob", System.getenv("BOB_PASSWORD"), Role.VIEWER)
 *         .start();
 * }</pre>
 */
public final class DashboardServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DashboardServer.class);

    private final HttpServer server;
    private final ExecutorService executor;
    private final Handler handler;
    private final Accounts accounts;
    private final Sessions sessions;
    private final boolean secureCookies;

    private DashboardServer(Builder b) throws IOException {
        this.handler = new Handler(b.client, true, b.mask);
        this.accounts = b.accounts;
        this.sessions = new Sessions(b.idle);
        this.secureCookies = b.secureCookies;
        AtomicInteger n = new AtomicInteger();
        this.executor = Executors.newFixedThreadPool(b.threads, r -> {
            Thread t = new Thread(r, "coop-dashboard-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.server = HttpServer.create(new InetSocketAddress(b.bind, b.port), 64);
        server.setExecutor(executor);
        server.createContext("/", ex -> serve(new HttpExchange(ex)));
        server.start();
    }

    public static Builder builder(CoopClient client) {
        return new Builder(client);
    }

    /** The port it listens on (useful with port 0). */
    public int port() {
        return server.getAddress().getPort();
    }

    /** Its address, e.g. {@code http://127.0.0.1:8080/}. */
    public URI uri() {
        String host = server.getAddress().getAddress().getHostAddress();
        return URI.create("http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port() + "/");
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }

    private void serve(HttpExchange ex) throws IOException {
        try {
            Responses.secure(ex);
            String path = ex.path();
            if (Assets.serve(ex, path)) {
                return;
            }
            switch (path) {
                case "/login" -> login(ex);
                case "/logout" -> logout(ex);
                default -> {
                    Caller caller = caller(ex);
                    if (caller != null) {
                        handler.handle(ex, caller);
                    } else if (path.startsWith("/api/")) {
                        ex.responseHeader("WWW-Authenticate", "Bearer realm=\"coop-dashboard\"");
                        Responses.error(ex, 401, "Log in first (or send Authorization: Bearer <token>)");
                    } else {
                        Responses.redirect(ex, "/login");
                    }
                }
            }
        } catch (RuntimeException e) {
            log.warn("The dashboard could not answer {} {}", ex.method(), ex.path(), e);
            Responses.error(ex, 500, "The dashboard could not answer");
        }
    }

    private Caller caller(HttpExchange ex) {
        Caller c = sessions.find(Sessions.cookie(ex.header("Cookie"), Sessions.COOKIE));
        return c != null ? c : accounts.authorization(ex.header("Authorization"));
    }

    private void login(HttpExchange ex) throws IOException {
        if (ex.method().equals("GET")) {
            Caller byLink = accounts.token(ex.query("token"));
            if (byLink != null) { // the link printed at start: log in and drop the token from the address bar
                startSession(ex, byLink);
                return;
            }
            ex.send(200, Assets.type("login.html"), Assets.bytes("login.html"));
            return;
        }
        if (!ex.method().equals("POST")) {
            Responses.error(ex, 405, "Log in with the form");
            return;
        }
        Map<String, String> form = HttpExchange.parse(new String(ex.body(8 * 1024), StandardCharsets.UTF_8));
        String token = form.get("token");
        Caller who = token != null && !token.isEmpty()
                ? accounts.token(token)
                : accounts.password(form.get("user"), form.get("password"));
        if (who == null) {
            log.info("Dashboard login refused for '{}'", form.getOrDefault("user", "(token)"));
            Responses.redirect(ex, "/login?failed=1");
            return;
        }
        startSession(ex, who);
    }

    private void startSession(HttpExchange ex, Caller who) throws IOException {
        String id = sessions.open(who);
        ex.responseHeader("Set-Cookie", Sessions.COOKIE + "=" + id + "; Path=/; HttpOnly; SameSite=Strict"
                + (secureCookies ? "; Secure" : ""));
        log.info("Dashboard login: {} ({})", who.name(), who.role());
        Responses.redirect(ex, "/");
    }

    private void logout(HttpExchange ex) throws IOException {
        String id = Sessions.cookie(ex.header("Cookie"), Sessions.COOKIE);
        Caller c = sessions.find(id);
        if (!ex.method().equals("POST") || c == null || !Objects.equals(c.csrf(), ex.header(Handler.CSRF_HEADER))) {
            Responses.error(ex, 403, "Log out from the page");
            return;
        }
        sessions.close(id);
        ex.responseHeader("Set-Cookie", Sessions.COOKIE + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");
        ex.send(200, "application/json; charset=utf-8", "{\"ok\":true}".getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Runs a dashboard from the command line: {@code --url jdbc:postgresql://... [--db-user U] [--db-password P]
     * [--schema coop] [--port 8080] [--bind 127.0.0.1]}. Dashboard users come from the environment:
     * {@code COOP_DASHBOARD_USERS} ({@code name:password:role,...}, role {@code viewer} or {@code operator}) and
     * {@code COOP_DASHBOARD_TOKEN} (an operator token); with neither, a random operator token is made and the
     * login link printed.
     */
    public static void main(String[] args) throws IOException {
        Map<String, String> opts = new java.util.HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            opts.put(args[i], args[i + 1]);
        }
        String url = opts.getOrDefault("--url", System.getenv("COOP_JDBC_URL"));
        if (url == null) {
            System.err.println("Usage: DashboardServer --url jdbc:postgresql://host:5432/db [--db-user U]"
                    + " [--db-password P] [--schema coop] [--port 8080] [--bind 127.0.0.1]");
            System.exit(2);
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(opts.getOrDefault("--db-user", System.getenv("COOP_JDBC_USER")));
        config.setPassword(opts.getOrDefault("--db-password", System.getenv("COOP_JDBC_PASSWORD")));
        config.setMaximumPoolSize(4);
        config.setPoolName("coop-dashboard");
        HikariDataSource ds = new HikariDataSource(config);
        CoopClient client = CoopClient.builder(ds).schema(opts.getOrDefault("--schema", "coop")).migrate(false)
                .build();
        Builder b = builder(client).bind(opts.getOrDefault("--bind", "127.0.0.1"))
                .port(Integer.parseInt(opts.getOrDefault("--port", "8080"))).fromEnvironment(System.getenv());
        String link = b.ensureAccess();
        DashboardServer server = b.start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close();
            ds.close();
        }));
        System.out.println(started(server, link));
    }

    /** Where the dashboard listens, with the login link when a token was made for this start (one or two lines). */
    public static String started(DashboardServer server, String oneTimeToken) {
        String where = "Coop dashboard on " + server.uri();
        if (oneTimeToken == null) {
            return where;
        }
        return where + System.lineSeparator() + "Open " + server.uri() + "login?token=" + oneTimeToken
                + "  (an operator token made for this start; set COOP_DASHBOARD_USERS or COOP_DASHBOARD_TOKEN to"
                + " choose your own)";
    }

    /** Settings of a standalone dashboard; each is validated as it is set. */
    public static final class Builder {
        private final CoopClient client;
        private final Accounts accounts = new Accounts();
        private String bind = "127.0.0.1";
        private int port = 8080;
        private int threads = 4;
        private Duration idle = Duration.ofHours(8);
        private boolean secureCookies;
        private JsonMask mask = JsonMask.NONE;

        private Builder(CoopClient client) {
            this.client = Objects.requireNonNull(client, "client");
        }

        /** The address to listen on (default 127.0.0.1: this machine only). */
        public Builder bind(String address) {
            if (address == null || address.isBlank()) {
                throw new IllegalArgumentException("The dashboard's bind address cannot be empty");
            }
            this.bind = address.strip();
            return this;
        }

        /** The port (default 8080; 0 picks a free one). */
        public Builder port(int port) {
            if (port < 0 || port > 65_535) {
                throw new IllegalArgumentException("The dashboard's port must be 0 to 65535, was " + port);
            }
            this.port = port;
            return this;
        }

        /** A user who logs in with a password (at least 8 characters). */
        public Builder user(String name, String password, Role role) {
            accounts.user(name, password, Objects.requireNonNull(role, "role"));
            return this;
        }

        /** A token (at least 16 characters) for the login form, a login link, or {@code Authorization: Bearer}. */
        public Builder token(String token, Role role) {
            accounts.token(token, Objects.requireNonNull(role, "role"));
            return this;
        }

        /** How long a session lives without use (default 8 hours). */
        public Builder sessionIdleTimeout(Duration idle) {
            if (idle == null || idle.isNegative() || idle.isZero()) {
                throw new IllegalArgumentException("The session idle timeout must be positive, was " + idle);
            }
            this.idle = idle;
            return this;
        }

        /** Marks the session cookie {@code Secure}: set it when a TLS proxy serves the dashboard. */
        public Builder secureCookies(boolean secure) {
            this.secureCookies = secure;
            return this;
        }

        /** Request threads (default 4). */
        public Builder threads(int threads) {
            if (threads < 1 || threads > 64) {
                throw new IllegalArgumentException("The dashboard's threads must be 1 to 64, was " + threads);
            }
            this.threads = threads;
            return this;
        }

        /**
         * Fields whose values payloads, results and context values show as {@code ***}: names, compared without
         * regard to case, in which {@code *} stands for any characters ({@code password}, {@code *token*}); see
         * {@link JsonMask}.
         */
        public Builder mask(String... fields) {
            this.mask = JsonMask.of(java.util.List.of(fields));
            return this;
        }

        /**
         * Users from {@code COOP_DASHBOARD_USERS} ({@code name:password:role} separated by commas) and an operator
         * token from {@code COOP_DASHBOARD_TOKEN}, when set.
         */
        public Builder fromEnvironment(Map<String, String> env) {
            String users = env.get("COOP_DASHBOARD_USERS");
            if (users != null && !users.isBlank()) {
                for (String entry : users.split(",")) {
                    String[] parts = entry.strip().split(":", 3);
                    if (parts.length != 3) {
                        throw new IllegalArgumentException("COOP_DASHBOARD_USERS entries are name:password:role,"
                                + " one is not (its name: '" + parts[0] + "')");
                    }
                    user(parts[0], parts[1], Role.parse(parts[2]));
                }
            }
            String token = env.get("COOP_DASHBOARD_TOKEN");
            if (token != null && !token.isBlank()) {
                token(token.strip(), Role.OPERATOR);
            }
            String masked = env.get("COOP_DASHBOARD_MASK"); // field patterns, comma-separated
            if (masked != null && !masked.isBlank()) {
                this.mask = JsonMask.parse(masked);
            }
            return this;
        }

        /**
         * When no user or token is configured, makes a random operator token and returns it (print the login link:
         * nobody gets in anonymously); null when access is already configured.
         */
        public String ensureAccess() {
            if (!accounts.isEmpty()) {
                return null;
            }
            String token = Sessions.random();
            accounts.token(token, Role.OPERATOR);
            return token;
        }

        /** Starts listening. Refused when no user or token is configured: no anonymous access. */
        public DashboardServer start() throws IOException {
            if (accounts.isEmpty()) {
                throw new IllegalStateException("A dashboard needs at least one user or token: there is no"
                        + " anonymous access (use ensureAccess() for a random token)");
            }
            return new DashboardServer(this);
        }
    }
}
