package dev.coop.dashboard.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/** Headers every response carries, and the small responses adapters send themselves. */
public final class Responses {
    /** Scripts and styles only from the jar; no inline script, no framing, no plug-ins. */
    public static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
            + " connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

    private Responses() {
    }

    public static void secure(Exchange ex) {
        ex.responseHeader("Content-Security-Policy", CSP);
        ex.responseHeader("X-Frame-Options", "DENY");
        ex.responseHeader("X-Content-Type-Options", "nosniff");
        ex.responseHeader("Referrer-Policy", "no-referrer");
        ex.responseHeader("Cross-Origin-Opener-Policy", "same-origin");
        ex.responseHeader("Cross-Origin-Resource-Policy", "same-origin");
        ex.responseHeader("Cache-Control", "no-store");
    }

    /** A JSON error: {@code {"error": "..."}}. */
    public static void error(Exchange ex, int status, String message) throws IOException {
        String json = "{\"error\":" + quote(message) + "}";
        ex.send(status, "application/json; charset=utf-8", json.getBytes(StandardCharsets.UTF_8));
    }

    public static void redirect(Exchange ex, String location) throws IOException {
        ex.responseHeader("Location", location);
        ex.send(303, "text/plain; charset=utf-8", new byte[0]);
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '<' -> b.append("\\u003c");
                case '>' -> b.append("\\u003e");
                case '&' -> b.append("\\u0026");
                default -> {
                    if (ch < 0x20) {
                        b.append(String.format("\\u%04x", (int) ch));
                    } else {
                        b.append(ch);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
