package dev.coop.dashboard.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/** {@link Exchange} over the JDK's {@code com.sun.net.httpserver}. */
public final class HttpExchange implements Exchange {
    private final com.sun.net.httpserver.HttpExchange ex;
    private final Map<String, String> query;

    public HttpExchange(com.sun.net.httpserver.HttpExchange ex) {
        this.ex = ex;
        this.query = parse(ex.getRequestURI().getRawQuery());
    }

    /** Decodes {@code a=1&b=2} (a query or a form body); the first value of a name wins. */
    public static Map<String, String> parse(String raw) {
        Map<String, String> values = new HashMap<>();
        if (raw == null || raw.isEmpty()) {
            return values;
        }
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            String name = eq < 0 ? pair : pair.substring(0, eq);
            String value = eq < 0 ? "" : pair.substring(eq + 1);
            try {
                values.putIfAbsent(URLDecoder.decode(name, StandardCharsets.UTF_8),
                        URLDecoder.decode(value, StandardCharsets.UTF_8));
            } catch (IllegalArgumentException e) {
                // a malformed pair is ignored
            }
        }
        return values;
    }

    @Override
    public String method() {
        return ex.getRequestMethod();
    }

    @Override
    public String path() {
        String p = ex.getRequestURI().getPath();
        return p == null || p.isEmpty() ? "/" : p;
    }

    @Override
    public String query(String name) {
        return query.get(name);
    }

    @Override
    public String header(String name) {
        return ex.getRequestHeaders().getFirst(name);
    }

    @Override
    public byte[] body(int max) throws IOException {
        try (InputStream in = ex.getRequestBody()) {
            byte[] b = in.readNBytes(max + 1);
            if (b.length > max) {
                throw new Handler.BadRequest(413, "The request body is larger than " + max + " bytes");
            }
            return b;
        }
    }

    @Override
    public void responseHeader(String name, String value) {
        ex.getResponseHeaders().add(name, value);
    }

    @Override
    public void send(int status, String contentType, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", contentType);
        boolean head = method().equals("HEAD");
        ex.sendResponseHeaders(status, head || body.length == 0 ? -1 : body.length);
        if (!head && body.length > 0) {
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        }
        ex.close();
    }
}
