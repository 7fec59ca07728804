package dev.coop.dashboard.internal;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/** Decodes {@code a=1&b=2}: a query string or a form body. */
final class Forms {
    private Forms() {
    }

    /** The decoded pairs; the first value of a name wins, a malformed pair is ignored. */
    static Map<String, String> parse(String raw) {
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
}
