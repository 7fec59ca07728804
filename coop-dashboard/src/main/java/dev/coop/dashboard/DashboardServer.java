package dev.coop.dashboard;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.coop.CoopClient;
import dev.coop.dashboard.internal.Accounts;
import dev.coop.dashboard.internal.Gate;
import dev.coop.dashboard.internal.Handler;
import dev.coop.dashboard.internal.LoginThrottle;
import dev.coop.dashboard.internal.ServerSettings;
import dev.coop.dashboard.internal.Sessions;
import dev.coop.dashboard.internal.StandaloneServer;
import dev.coop.render.JsonMask;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * The dashboard as a standalone web server on Jetty's core server (no servlet container). It binds 127.0.0.1 unless
 * told otherwise and lets nobody in without a configured user (password) or token; users log in on a form and get a
 * session cookie ({@code HttpOnly}, {@code SameSite=Strict}) with its own CSRF token, scripts send
 * {@code Authorization: Bearer <token>} or basic credentials. Failed logins are throttled per user and per address.
 * Slow or idle clients cannot hold it: headers and bodies are read without a thread waiting for them, a connection
 * that sends nothing for {@link Builder#idleTimeout(Duration)} is closed, and connections are bounded per client
 * address and in all. With {@link Builder#tls(Path, String)} it serves HTTPS.
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
    /** How long a connection may send nothing before it is closed, by default. */
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(20);
    /** Open connections per client address, by default. */
    public static final int DEFAULT_CONNECTIONS_PER_CLIENT = 32;
    /** Open connections in all, by default. */
    public static final int DEFAULT_MAX_CONNECTIONS = 1_000;

    private final StandaloneServer server;

    private DashboardServer(Builder b) throws IOException {
        Handler handler = new Handler(b.client, true, b.mask);
        boolean secure = b.secureCookies || b.keyStore != null;
        Gate gate = new Gate(handler, b.accounts, new Sessions(b.idle), new LoginThrottle(), secure);
        ServerSettings settings = new ServerSettings(b.bind, b.port, b.threads, b.idleTimeout, b.maxConnections,
                b.connectionsPerClient, b.keyStore, b.keyStorePassword);
        try {
            this.server = new StandaloneServer(settings, gate);
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IOException("The dashboard could not listen on " + b.bind + ":" + b.port + ": " + e, e);
        }
    }

    public static Builder builder(CoopClient client) {
        return new Builder(client);
    }

    /** The port it listens on (useful with port 0). */
    public int port() {
        return server.port();
    }

    /** Its address, e.g. {@code http://127.0.0.1:8080/} ({@code https://} with a key store). */
    public URI uri() {
        InetSocketAddress address = server.address();
        String host = address.getAddress() != null ? address.getAddress().getHostAddress() : address.getHostString();
        return URI.create((server.tls() ? "https" : "http") + "://" + (host.contains(":") ? "[" + host + "]" : host)
                + ":" + port() + "/");
    }

    @Override
    public void close() {
        server.close();
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
        private int threads = 8;
        private Duration idle = Duration.ofHours(8);
        private boolean secureCookies;
        private Duration idleTimeout = DEFAULT_IDLE_TIMEOUT;
        private int maxConnections = DEFAULT_MAX_CONNECTIONS;
        private int connectionsPerClient = DEFAULT_CONNECTIONS_PER_CLIENT;
        private Path keyStore;
        private String keyStorePassword;
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

        /**
         * Serves HTTPS with the key and certificate of a key store (PKCS#12 or JKS), e.g. made with
         * {@code keytool -genkeypair -keyalg EC -storetype PKCS12 -keystore dashboard.p12}; the session cookie is then
         * {@code Secure}.
         */
        public Builder tls(Path keyStore, String password) {
            if (keyStore == null || !Files.isReadable(keyStore)) {
                throw new IllegalArgumentException("The dashboard's key store must be a readable file, was "
                        + keyStore);
            }
            this.keyStore = keyStore;
            this.keyStorePassword = Objects.requireNonNull(password, "password");
            return this;
        }

        /**
         * How long a connection may send nothing (while its request's headers or body are awaited, or between
         * requests) before it is closed (default {@link #DEFAULT_IDLE_TIMEOUT 20 s}; 1 s to 10 min).
         */
        public Builder idleTimeout(Duration timeout) {
            if (timeout == null || timeout.compareTo(Duration.ofSeconds(1)) < 0
                    || timeout.compareTo(Duration.ofMinutes(10)) > 0) {
                throw new IllegalArgumentException("The dashboard's idle timeout must be 1 s to 10 min, was "
                        + timeout);
            }
            this.idleTimeout = timeout;
            return this;
        }

        /**
         * Open connections per client address (default {@value #DEFAULT_CONNECTIONS_PER_CLIENT}); more are closed as
         * they open. Behind a reverse proxy every request comes from the proxy's address: raise it there.
         */
        public Builder connectionsPerClient(int n) {
            if (n < 1 || n > 100_000) {
                throw new IllegalArgumentException("The dashboard's connections per client must be 1 to 100000, was "
                        + n);
            }
            this.connectionsPerClient = n;
            return this;
        }

        /** Open connections in all (default {@value #DEFAULT_MAX_CONNECTIONS}); beyond it, no new one is accepted. */
        public Builder maxConnections(int n) {
            if (n < 1 || n > 100_000) {
                throw new IllegalArgumentException("The dashboard's max connections must be 1 to 100000, was " + n);
            }
            this.maxConnections = n;
            return this;
        }

        /** Marks the session cookie {@code Secure}: set it when a TLS proxy serves the dashboard. */
        public Builder secureCookies(boolean secure) {
            this.secureCookies = secure;
            return this;
        }

        /** Request threads (default 8); they run authenticated requests, never wait for a slow client's bytes. */
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
         * Users from {@code COOP_DASHBOARD_USERS} ({@code name:password:role} separated by commas), an operator
         * token from {@code COOP_DASHBOARD_TOKEN}, HTTPS from {@code COOP_DASHBOARD_KEYSTORE} (a key store file)
         * with {@code COOP_DASHBOARD_KEYSTORE_PASSWORD}, and masked fields from {@code COOP_DASHBOARD_MASK}, when set.
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
            String keyStore = env.get("COOP_DASHBOARD_KEYSTORE");
            if (keyStore != null && !keyStore.isBlank()) {
                tls(Path.of(keyStore.strip()), env.getOrDefault("COOP_DASHBOARD_KEYSTORE_PASSWORD", ""));
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
