package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;

/** Small helpers of the dashboard's JSON answers. */
final class JsonText {
    private JsonText() {
    }

    /** JSON text a renderer wrote, read back as a tree to put into an answer. */
    static JsonNode tree(ObjectMapper mapper, String json) {
        try {
            return mapper.readTree(json);
        } catch (IOException e) {
            throw new IllegalStateException("Could not read back the rendered JSON", e);
        }
    }

    /** A value as JSON text (its {@code toString}), or null. */
    static String str(Object o) {
        return o == null ? null : o.toString();
    }
}
