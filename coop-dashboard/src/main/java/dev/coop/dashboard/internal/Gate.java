package dev.coop.dashboard.internal;

import dev.coop.render.TerminalText;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The standalone dashboard's front door: its login form and logout, and who a request comes from (a session
 * cookie, a bearer token or basic credentials); failed logins are throttled per user and per address, and a
 * locked address refuses only failing credentials.
 * Authenticated requests go on to the {@link Handler}.
 */
public final class Gate {
    private static final Logger log = LoggerFactory.getLogger(Gate.class);
    /** The largest login form. */
    static final int MAX_LOGIN_BODY = 8 * 1024;

    private final Handler handler;
    private final Accounts accounts;
    private final Sessions sessions;
    private final LoginThrottle throttle;
    private final boolean secureCookies;

    public Gate(Handler handler, Accounts accounts, Sessions sessions, LoginThrottle throttle,
            boolean secureCookies) {
        this.handler = handler;
        this.accounts = accounts;
        this.sessions = sessions;
        this.throttle = throttle;
        this.secureCookies = secureCookies;
    }

    public void serve(Exchange ex) throws IOException {
        try {
            Responses.secure(ex);
            String path = ex.path();
            if (Assets.serve(ex, path)) {
                return;
            }
            switch (path) {
                case "/login" -> login(ex);
                case "/logout" -> logout(ex);
                default -> authenticated(ex, path);
            }
        } catch (Handler.BadRequest e) {
            Responses.error(ex, e.status, e.getMessage());
        } catch (RuntimeException e) {
            log.warn("The dashboard could not answer {} {}", ex.method(), TerminalText.escape(ex.path()), e);
            Responses.error(ex, 500, "The dashboard could not answer");
        }
    }

    private void authenticated(Exchange ex, String path) throws IOException {
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

    private Caller caller(Exchange ex) {
        Caller c = sessions.find(Sessions.cookie(ex.header("Cookie"), Sessions.COOKIE));
        if (c != null) {
            return c;
        }
        String authorization = ex.header("Authorization");
        if (authorization == null) {
            return null;
        }
        String user = Accounts.basicUser(authorization);
        checkUser(ex, user);
        Caller who = accounts.authorization(authorization);
        if (who == null) {
            checkAddress(ex, user);
            refused(ex, user, "credentials in the Authorization header");
        } else {
            throttle.succeeded(user, ex.remoteAddress());
        }
        return who;
    }

    private void login(Exchange ex) throws IOException {
        if (ex.method().equals("GET")) {
            String token = ex.query("token");
            if (token == null) {
                ex.send(200, Assets.type("login.html"), Assets.bytes("login.html"));
                return;
            }
            Caller byLink = accounts.token(token);
            if (byLink == null) { // a stale link: the form, and a failure counted against the address
                checkAddress(ex, null);
                refused(ex, null, "a login link");
                Responses.redirect(ex, "/login?failed=1");
                return;
            }
            startSession(ex, byLink, null); // the link printed at start: log in, drop the token from the address
            return;
        }
        if (!ex.method().equals("POST")) {
            Responses.error(ex, 405, "Log in with the form");
            return;
        }
        Map<String, String> form = Forms.parse(new String(ex.body(MAX_LOGIN_BODY), StandardCharsets.UTF_8));
        String token = form.get("token");
        boolean byToken = token != null && !token.isEmpty();
        String user = byToken ? null : form.get("user");
        checkUser(ex, user);
        Caller who = byToken ? accounts.token(token) : accounts.password(user, form.get("password"));
        if (who == null) {
            checkAddress(ex, user);
            refused(ex, user, byToken ? "a token" : "a password");
            Responses.redirect(ex, "/login?failed=1");
            return;
        }
        startSession(ex, who, user);
    }

    /** A name locked by its failures waits before its password is even checked. */
    private void checkUser(Exchange ex, String user) {
        tooMany(ex, throttle.userWait(user));
    }

    /** Failing credentials from a locked address are answered 429 (and counted); valid ones got in before. */
    private void checkAddress(Exchange ex, String user) {
        Duration wait = throttle.addressWait(ex.remoteAddress());
        if (!wait.isZero()) {
            throttle.failed(user, ex.remoteAddress());
        }
        tooMany(ex, wait);
    }

    private static void tooMany(Exchange ex, Duration wait) {
        if (!wait.isZero()) {
            long seconds = Math.max(1, (wait.toMillis() + 999) / 1000);
            ex.responseHeader("Retry-After", Long.toString(seconds));
            throw new Handler.BadRequest(429, "Too many failed logins; try again in " + seconds + " s");
        }
    }

    private void refused(Exchange ex, String user, String how) {
        throttle.failed(user, ex.remoteAddress());
        log.info("Dashboard login refused for '{}' from {} ({})", TerminalText.escape(user == null ? "(token)" : user),
                TerminalText.escape(ex.remoteAddress()), how);
    }

    private void startSession(Exchange ex, Caller who, String user) throws IOException {
        throttle.succeeded(user, ex.remoteAddress());
        String id = sessions.open(who);
        ex.responseHeader("Set-Cookie", Sessions.COOKIE + "=" + id + "; Path=/; HttpOnly; SameSite=Strict"
                + (secureCookies ? "; Secure" : ""));
        log.info("Dashboard login: {} ({}) from {}", TerminalText.escape(who.name()), who.role(),
                TerminalText.escape(ex.remoteAddress()));
        Responses.redirect(ex, "/");
    }

    private void logout(Exchange ex) throws IOException {
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
}
