package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopValidationException;
import dev.coop.render.JsonMask;
import dev.coop.render.JsonRenderer;
import dev.coop.render.TerminalText;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The dashboard behind authentication: its page, and a JSON API that reads through {@link CoopClient} (and
 * {@link JsonRenderer} for trees, events and listings: {@link RunListings}, {@link TreeViews}, {@link OutsideViews})
 * and takes operator actions, each recorded in the audit.
 */
public final class Handler {
    public static final String CSRF_HEADER = "X-Coop-Csrf";
    private static final Logger log = LoggerFactory.getLogger(Handler.class);
    private static final int MAX_BODY = 16 * 1024;

    private final ObjectMapper mapper = Coop.defaultObjectMapper();
    private final Actions actions;
    private final boolean standalone;
    private final InputOutput io;
    private final CountsOverTime counts;
    private final RunListings listings;
    private final TreeViews trees;
    private final OutsideViews outside;

    /** @param standalone whether the dashboard logs users in itself (it then offers to log out) */
    public Handler(CoopClient client, boolean standalone) {
        this(client, standalone, JsonMask.NONE);
    }

    /**
     * @param standalone whether the dashboard logs users in itself (it then offers to log out)
     * @param mask the fields whose values payloads, results and context values show as {@code ***}
     */
    public Handler(CoopClient client, boolean standalone, JsonMask mask) {
        this.actions = new Actions(client);
        this.standalone = standalone;
        Objects.requireNonNull(mask, "mask");
        this.io = new InputOutput(client, mask, mapper);
        this.counts = new CountsOverTime(client, mapper);
        JsonRenderer renderer = new JsonRenderer(false);
        this.listings = new RunListings(client, renderer, mapper);
        this.trees = new TreeViews(client, renderer, mapper, mask);
        this.outside = new OutsideViews(client, mapper);
    }

    /** Serves an authenticated caller; the adapter has set the security headers. */
    public void handle(Exchange ex, Caller caller) throws IOException {
        String path = ex.path();
        try {
            if (Assets.serve(ex, path)) {
                return;
            }
            if (path.equals("/") || path.equals("/index.html")) {
                requireGet(ex);
                ex.send(200, Assets.type("index.html"), Assets.bytes("index.html"));
            } else if (path.equals("/api/action")) {
                action(ex, caller);
            } else if (path.startsWith("/api/")) {
                requireGet(ex);
                json(ex, read(ex, caller, path.substring("/api/".length())));
            } else {
                Responses.error(ex, 404, "No such page: " + path);
            }
        } catch (BadRequest e) {
            Responses.error(ex, e.status, e.getMessage());
        } catch (CoopValidationException | IllegalArgumentException e) {
            Responses.error(ex, 400, e.getMessage());
        } catch (CoopStoreException e) { // the database's own words stay in the log
            String ref = reference();
            log.warn("The dashboard could not read or act for {} {} (ref {})", ex.method(), TerminalText.escape(path),
                    ref, e);
            Responses.error(ex, 503, "The database did not answer as expected; try again (the dashboard's log has"
                    + " the details under ref " + ref + ")");
        } catch (RuntimeException e) {
            String ref = reference();
            log.warn("The dashboard could not answer {} {} (ref {})", ex.method(), TerminalText.escape(path), ref, e);
            Responses.error(ex, 500, "The dashboard could not answer (its log has the details under ref " + ref
                    + ")");
        }
    }

    private JsonNode read(Exchange ex, Caller caller, String what) {
        return switch (what) {
            case "session" -> session(caller);
            case "runs" -> listings.runs(ex);
            case "parked" -> listings.parked();
            case "hierarchy" -> trees.hierarchy(Params.message(ex, "message"));
            case "run" -> trees.run(Params.lineage(ex, "lineage"));
            case "events" -> trees.events(ex);
            case "schedules" -> outside.schedules();
            case "joins" -> outside.joins(ex);
            case "tasks" -> outside.tasks(ex);
            case "find" -> listings.search(ex);
            case "io" -> io.read(ex);
            case "parked-count" -> listings.parkedCount(ex);
            case "search" -> listings.search(ex);
            case "counts" -> counts.read(ex);
            default -> throw new BadRequest(404, "No such API: /api/" + what);
        };
    }

    private ObjectNode session(Caller caller) {
        ObjectNode o = mapper.createObjectNode();
        o.put("user", caller.name());
        o.put("role", caller.role().name());
        o.put("csrf", caller.csrf());
        o.put("logout", standalone && caller.csrf() != null);
        return o;
    }

    private void action(Exchange ex, Caller caller) throws IOException {
        if (!ex.method().equals("POST")) {
            throw new BadRequest(405, "Actions are POST requests");
        }
        checkCsrf(ex, caller);
        String type = ex.header("Content-Type");
        if (type == null || !type.toLowerCase().startsWith("application/json")) {
            throw new BadRequest(415, "An action is a JSON body (Content-Type: application/json)");
        }
        JsonNode body;
        try {
            body = mapper.readTree(ex.body(MAX_BODY));
        } catch (IOException e) {
            throw new BadRequest(400, "The action is not valid JSON: " + e.getMessage());
        }
        if (body == null || !body.isObject()) {
            throw new BadRequest(400, "The action must be a JSON object");
        }
        JsonNode answer = actions.take(body, caller, mapper);
        ex.send(Actions.status(answer), "application/json; charset=utf-8", mapper.writeValueAsBytes(answer));
    }

    /** A cookie session's action must echo its CSRF token, and come from this origin when the browser says so. */
    private static void checkCsrf(Exchange ex, Caller caller) {
        if (caller.csrf() == null) {
            return; // credentials a script sends itself: a forged cross-site request cannot carry them
        }
        String sent = ex.header(CSRF_HEADER);
        if (sent == null || !MessageDigest.isEqual(sent.getBytes(StandardCharsets.UTF_8),
                caller.csrf().getBytes(StandardCharsets.UTF_8))) {
            throw new BadRequest(403, "Missing or wrong CSRF token: reload the page");
        }
        String origin = ex.header("Origin");
        String host = ex.header("Host");
        if (origin != null && host != null && !origin.equals("null")) {
            String bare = origin.replaceFirst("^[a-zA-Z]+://", "");
            if (!bare.equalsIgnoreCase(host)) {
                throw new BadRequest(403, "Cross-origin action refused (Origin " + origin + ", Host " + host + ")");
            }
        }
    }

    private static void requireGet(Exchange ex) {
        if (!ex.method().equals("GET") && !ex.method().equals("HEAD")) {
            throw new BadRequest(405, "Only GET here");
        }
    }

    private void json(Exchange ex, JsonNode node) throws IOException {
        ex.send(200, "application/json; charset=utf-8", mapper.writeValueAsBytes(node));
    }

    private static String reference() {
        return Long.toString(java.util.concurrent.ThreadLocalRandom.current().nextLong(1L << 40), 36);
    }

    /** The refusal of a body larger than {@code max} bytes. */
    public static RuntimeException tooLarge(int max) {
        return new BadRequest(413, "The request body is larger than " + max + " bytes");
    }

    /** A request the dashboard refuses, with its HTTP status. */
    static final class BadRequest extends RuntimeException {
        final int status;

        BadRequest(int status, String message) {
            super(message);
            this.status = status;
        }
    }
}
