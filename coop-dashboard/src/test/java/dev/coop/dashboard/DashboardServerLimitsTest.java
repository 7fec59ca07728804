package dev.coop.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.test.CoopDatabase;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The standalone server under slow, greedy and guessing clients, and over TLS. */
class DashboardServerLimitsTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase(4);

    static final String TOKEN = "operator-token-0123456789";
    static final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    static CoopClient client;

    final List<Socket> sockets = new ArrayList<>();

    @BeforeAll
    static void client() {
        client = Coop.client(db.dataSource());
    }

    @AfterEach
    void closeSockets() throws IOException {
        for (Socket s : sockets) {
            s.close();
        }
    }

    static DashboardServer.Builder dashboard() {
        return DashboardServer.builder(client).port(0).user("olga", "operator-pass", Role.OPERATOR)
                .user("vic", "viewer-pass", Role.VIEWER).token(TOKEN, Role.OPERATOR);
    }

    @Test
    void operators_are_answered_while_hundreds_of_slow_clients_hold_half_requests() throws Exception {
        try (DashboardServer server = dashboard().threads(2).start()) {
            for (int i = 0; i < 300; i++) { // from ten addresses, 30 each: under the limit per client
                Socket s = open(server, "127.0.0." + (2 + i % 10));
                String half = i % 3 == 0
                        ? "GET /api/runs HTTP/1.1\r\nHost: x\r\nAuthoriz"
                        : "POST /" + (i % 3 == 1 ? "login" : "api/action") + " HTTP/1.1\r\nHost: x\r\n"
                                + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 5000\r\n\r\nuser=";
                s.getOutputStream().write(half.getBytes(StandardCharsets.US_ASCII));
                s.getOutputStream().flush();
            }
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(server.uri().resolve("api/session"))
                    .header("Authorization", "Bearer " + TOKEN).timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).contains("OPERATOR");
            assertThat(login(server, "olga", "operator-pass").statusCode()).isEqualTo(303);
        }
    }

    @Test
    void a_client_gets_no_more_connections_than_its_limit() throws Exception {
        try (DashboardServer server = dashboard().connectionsPerClient(3).start()) {
            List<Socket> allowed = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                allowed.add(open(server, "127.0.0.20"));
            }
            Socket fourth = open(server, "127.0.0.20");
            assertThat(closedByServer(fourth)).as("the fourth connection is closed").isTrue();
            assertThat(response(allowed.get(0), "GET /login HTTP/1.1\r\nHost: x\r\n\r\n")).startsWith("HTTP/1.1 200");
            assertThat(response(open(server, "127.0.0.21"), "GET /login HTTP/1.1\r\nHost: x\r\n\r\n"))
                    .as("another client").startsWith("HTTP/1.1 200");
        }
    }

    @Test
    void a_connection_that_sends_nothing_is_closed_after_the_idle_timeout() throws Exception {
        try (DashboardServer server = dashboard().idleTimeout(Duration.ofSeconds(1)).start()) {
            Socket s = open(server, "127.0.0.1");
            s.getOutputStream().write("POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nus"
                    .getBytes(StandardCharsets.US_ASCII));
            assertThat(closedByServer(s)).as("closed by the server, not by our read timeout").isTrue();
        }
    }

    @Test
    void a_huge_login_body_is_refused_with_413_at_once() throws Exception {
        try (DashboardServer server = dashboard().start()) {
            String declared = "POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                    + "Content-Length: 20000000\r\n\r\nuser=olga&password=";
            assertThat(response(open(server, "127.0.0.1"), declared)).startsWith("HTTP/1.1 413")
                    .contains("larger than");
            StringBuilder chunked = new StringBuilder("POST /login HTTP/1.1\r\nHost: x\r\n"
                    + "Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n");
            String kib = "a".repeat(1024);
            for (int i = 0; i < 40; i++) {
                chunked.append("400\r\n").append(kib).append("\r\n");
            }
            assertThat(response(open(server, "127.0.0.1"), chunked.toString())).startsWith("HTTP/1.1 413");
            assertThat(login(server, "olga", "operator-pass").statusCode()).isEqualTo(303);
        }
    }

    @Test
    void failed_logins_are_throttled_per_user() throws Exception {
        try (DashboardServer server = dashboard().start()) {
            for (int i = 0; i < 5; i++) {
                assertThat(login(server, "olga", "guess-" + i).headers().firstValue("Location"))
                        .hasValue("/login?failed=1");
            }
            HttpResponse<String> locked = login(server, "olga", "operator-pass");
            assertThat(locked.statusCode()).as("even the right password waits").isEqualTo(429);
            assertThat(locked.headers().firstValue("Retry-After")).isPresent();
            assertThat(locked.body()).contains("Too many failed logins");
            assertThat(login(server, "vic", "viewer-pass").statusCode()).as("another user").isEqualTo(303);
        }
    }

    @Test
    void failed_logins_are_throttled_per_address_and_basic_credentials_count() throws Exception {
        try (DashboardServer server = dashboard().start()) {
            for (int i = 0; i < 20; i++) {
                String basic = java.util.Base64.getEncoder().encodeToString(("user" + i + ":guess")
                        .getBytes(StandardCharsets.UTF_8));
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(server.uri().resolve("api/session"))
                        .header("Authorization", "Basic " + basic).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).isEqualTo(401);
            }
            assertThat(login(server, "vic", "wrong-pass").statusCode()).as("failing credentials wait")
                    .isEqualTo(429);
            HttpResponse<String> badToken = http.send(HttpRequest.newBuilder(server.uri().resolve("api/session"))
                    .header("Authorization", "Bearer not-a-valid-token-at-all").build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(badToken.statusCode()).isEqualTo(429);
            assertThat(badToken.headers().firstValue("Retry-After")).isPresent();
            // behind a proxy every operator has this address: valid credentials and sessions still pass
            HttpResponse<String> session = login(server, "vic", "viewer-pass");
            assertThat(session.statusCode()).as("a valid password").isEqualTo(303);
            String cookie = session.headers().firstValue("Set-Cookie").orElseThrow().split(";")[0];
            assertThat(http.send(HttpRequest.newBuilder(server.uri().resolve("api/session")).header("Cookie", cookie)
                    .build(), HttpResponse.BodyHandlers.ofString()).statusCode()).as("a session").isEqualTo(200);
            for (int i = 0; i < 20; i++) { // lock it again (the valid login cleared the address's count)
                login(server, "user" + i, "guess");
            }
            assertThat(login(server, "vic", "wrong-pass").statusCode()).isEqualTo(429);
            assertThat(http.send(HttpRequest.newBuilder(server.uri().resolve("api/session"))
                    .header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.ofString())
                    .statusCode()).as("a valid bearer token").isEqualTo(200);
            assertThat(http.send(HttpRequest.newBuilder(server.uri().resolve("api/session")).header("Cookie", cookie)
                    .build(), HttpResponse.BodyHandlers.ofString()).statusCode()).as("a session").isEqualTo(200);
        }
    }

    @Test
    void it_serves_https_with_a_key_store(@TempDir Path dir) throws Exception {
        Path store = dir.resolve("dashboard.p12");
        Process keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair", "-alias", "dashboard", "-keyalg", "EC", "-groupname", "secp256r1", "-dname",
                "CN=localhost", "-ext", "SAN=ip:127.0.0.1", "-validity", "2", "-storetype", "PKCS12", "-keystore",
                store.toString(), "-storepass", "store-pass", "-keypass", "store-pass").inheritIO().start();
        assertThat(keytool.waitFor()).isZero();
        try (DashboardServer server = dashboard().tls(store, "store-pass").start()) {
            assertThat(server.uri().getScheme()).isEqualTo("https");
            KeyStore trusted = KeyStore.getInstance("PKCS12");
            try (FileInputStream in = new FileInputStream(store.toFile())) {
                trusted.load(in, "store-pass".toCharArray());
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trusted);
            SSLContext ssl = SSLContext.getInstance("TLS");
            ssl.init(null, tmf.getTrustManagers(), null);
            HttpClient https = HttpClient.newBuilder().sslContext(ssl).build();
            HttpResponse<String> r = https.send(HttpRequest.newBuilder(server.uri().resolve("login"))
                    .header("Content-Type", "application/x-www-form-urlencoded")
                    .POST(HttpRequest.BodyPublishers.ofString("user=olga&password=operator-pass")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(303);
            assertThat(r.headers().firstValue("Set-Cookie")).get().asString().contains("Secure");
        }
    }

    // ---- helpers

    Socket open(DashboardServer server, String from) throws IOException {
        Socket s = new Socket();
        sockets.add(s);
        s.bind(new InetSocketAddress(InetAddress.getByName(from), 0));
        s.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), server.port()), 10_000);
        return s;
    }

    /** What the server answers to {@code request} on {@code s}, up to its end or a quiet second after some bytes. */
    static String response(Socket s, String request) throws IOException {
        s.setSoTimeout(10_000);
        try {
            OutputStream out = s.getOutputStream();
            out.write(request.getBytes(StandardCharsets.US_ASCII));
            out.flush();
        } catch (IOException e) {
            // the server closed the connection while the request was sent: read what it answered
        }
        return readToEnd(s.getInputStream());
    }

    /** True when the server closes the connection (end of stream or reset) within 15 s, false on our timeout. */
    static boolean closedByServer(Socket s) throws IOException {
        s.setSoTimeout(15_000);
        try {
            InputStream in = s.getInputStream();
            while (in.read() >= 0) { // a 408 may come first
            }
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (java.net.SocketException e) {
            return true; // reset
        }
    }

    static String readToEnd(InputStream in) throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        try {
            for (int n; (n = in.read(buf)) >= 0;) {
                got.write(buf, 0, n);
                String text = got.toString(StandardCharsets.US_ASCII);
                if (text.contains("\r\n\r\n") && complete(text)) {
                    break;
                }
            }
        } catch (SocketTimeoutException | java.net.SocketException e) {
            // nothing more
        }
        return got.toString(StandardCharsets.US_ASCII);
    }

    private static boolean complete(String text) {
        int head = text.indexOf("\r\n\r\n");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?i)content-length: *(\\d+)").matcher(text);
        return m.find() && m.start() < head && text.length() - head - 4 >= Integer.parseInt(m.group(1));
    }

    static HttpResponse<String> login(DashboardServer server, String user, String password) throws Exception {
        String form = "user=" + URLEncoder.encode(user, StandardCharsets.UTF_8) + "&password="
                + URLEncoder.encode(password, StandardCharsets.UTF_8);
        return http.send(HttpRequest.newBuilder(server.uri().resolve("login"))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form)).build(), HttpResponse.BodyHandlers.ofString());
    }
}
