package dev.coop.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * Turns a Java throwable into the language-agnostic failure JSON stored in the log (see docs/protocol.md):
 * {@code {"message", "type", "source", "stackTrace": [{"fileName", "lineNumber", "className", "functionName"}],
 * "causes": [...]}}.
 */
public final class FailureJson {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final int MAX_FRAMES = 64;

    private FailureJson() {
    }

    /** A failure raised by Coop itself (no Java throwable behind it). */
    public static ObjectNode of(String type, String message, String source) {
        ObjectNode node = NODES.objectNode();
        node.put("message", message);
        node.put("type", type);
        node.put("source", source);
        node.set("stackTrace", NODES.arrayNode());
        node.set("causes", NODES.arrayNode());
        return node;
    }

    public static ObjectNode of(Throwable t, String source) {
        return of(t, source, new IdentityHashMap<>());
    }

    private static ObjectNode of(Throwable t, String source, Map<Throwable, Boolean> seen) {
        seen.put(t, true);
        ObjectNode node = NODES.objectNode();
        node.put("message", t.getMessage() == null ? "<no message>" : t.getMessage());
        node.put("type", t.getClass().getName());
        node.put("source", source);
        ArrayNode frames = node.putArray("stackTrace");
        StackTraceElement[] trace = t.getStackTrace();
        for (int i = 0; i < Math.min(trace.length, MAX_FRAMES); i++) {
            StackTraceElement e = trace[i];
            ObjectNode frame = frames.addObject();
            frame.put("fileName", e.getFileName() == null ? "<unknown filename>" : e.getFileName());
            frame.put("lineNumber", e.getLineNumber());
            frame.put("className", e.getClassName());
            frame.put("functionName", e.getMethodName());
        }
        ArrayNode causes = node.putArray("causes");
        if (t.getCause() != null && !seen.containsKey(t.getCause())) {
            causes.add(of(t.getCause(), source, seen));
        }
        for (Throwable s : t.getSuppressed()) {
            if (!seen.containsKey(s)) {
                causes.add(of(s, source, seen));
            }
        }
        return node;
    }
}
