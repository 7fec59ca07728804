package dev.coop.dashboard.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** The pages, scripts and styles in the jar, under {@code dev/coop/dashboard/web}; a fixed list, nothing else. */
public final class Assets {
    private static final Map<String, String> TYPES = Map.of(
            "index.html", "text/html; charset=utf-8",
            "login.html", "text/html; charset=utf-8",
            "app.js", "text/javascript; charset=utf-8",
            "login.js", "text/javascript; charset=utf-8",
            "app.css", "text/css; charset=utf-8",
            "favicon.svg", "image/svg+xml");
    private static final Map<String, byte[]> CACHE = new ConcurrentHashMap<>();

    private Assets() {
    }

    /** The content type of a known asset, or null when there is no such asset. */
    public static String type(String name) {
        return TYPES.get(name);
    }

    public static byte[] bytes(String name) {
        if (!TYPES.containsKey(name)) {
            throw new IllegalArgumentException("No dashboard asset '" + name + "'");
        }
        return CACHE.computeIfAbsent(name, n -> {
            try (InputStream in = Assets.class.getResourceAsStream("/dev/coop/dashboard/web/" + n)) {
                if (in == null) {
                    throw new IllegalStateException("The dashboard jar lacks web/" + n);
                }
                return in.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    /** Sends {@code /static/<name>} assets; false when the path names none. */
    public static boolean serve(Exchange ex, String path) throws IOException {
        if (!path.startsWith("/static/")) {
            return false;
        }
        String name = path.substring("/static/".length());
        String type = type(name);
        if (type == null || !ex.method().equals("GET") && !ex.method().equals("HEAD")) {
            return false;
        }
        ex.send(200, type, bytes(name));
        return true;
    }
}
