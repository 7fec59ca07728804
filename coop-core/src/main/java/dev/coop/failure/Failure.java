package dev.coop.failure;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A failure in the language-agnostic form stored in the event log (see docs/protocol.md): what happened, of which
 * type, where (the saga run and engine), a stack trace and the failures that caused it. Properties it does not know
 * (written by services in other languages) are kept and written back unchanged.
 */
@JsonPropertyOrder({"message", "type", "source", "stackTrace", "causes"})
@JsonInclude(JsonInclude.Include.NON_NULL)
public final class Failure {
    private static final ObjectMapper JSON = new ObjectMapper()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
    private static final int MAX_FRAMES = 64;

    private final String message;
    private final String type;
    private final String source;
    private final List<Frame> stackTrace;
    private final List<Failure> causes;
    private final Map<String, JsonNode> extensions = new LinkedHashMap<>();

    /** One stack frame; any field may be null for frames from other languages, whose extra fields are kept. */
    @JsonPropertyOrder({"fileName", "lineNumber", "className", "functionName"})
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static final class Frame {
        private final String fileName;
        private final Integer lineNumber;
        private final String className;
        private final String functionName;
        private final Map<String, JsonNode> extensions = new LinkedHashMap<>();

        @JsonCreator
        public Frame(@JsonProperty("fileName") String fileName, @JsonProperty("lineNumber") Integer lineNumber,
                @JsonProperty("className") String className, @JsonProperty("functionName") String functionName) {
            this.fileName = fileName;
            this.lineNumber = lineNumber;
            this.className = className;
            this.functionName = functionName;
        }

        @JsonProperty
        public String fileName() {
            return fileName;
        }

        @JsonProperty
        public Integer lineNumber() {
            return lineNumber;
        }

        @JsonProperty
        public String className() {
            return className;
        }

        @JsonProperty
        public String functionName() {
            return functionName;
        }

        /** Properties of the frame that this class does not model, unchanged. */
        @JsonAnyGetter
        public Map<String, JsonNode> extensions() {
            return extensions;
        }

        @JsonAnySetter
        void extension(String name, JsonNode value) {
            extensions.put(name, value);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Frame f && Objects.equals(f.fileName, fileName)
                    && Objects.equals(f.lineNumber, lineNumber) && Objects.equals(f.className, className)
                    && Objects.equals(f.functionName, functionName) && f.extensions.equals(extensions);
        }

        @Override
        public int hashCode() {
            return Objects.hash(fileName, lineNumber, className, functionName);
        }

        @Override
        public String toString() {
            return className + "." + functionName + "(" + fileName + ":" + lineNumber + ")";
        }
    }

    @JsonCreator
    public Failure(@JsonProperty("message") String message, @JsonProperty("type") String type,
            @JsonProperty("source") String source, @JsonProperty("stackTrace") List<Frame> stackTrace,
            @JsonProperty("causes") List<Failure> causes) {
        this.message = message;
        this.type = type;
        this.source = source;
        this.stackTrace = stackTrace == null ? null : List.copyOf(stackTrace);
        this.causes = causes == null ? null : List.copyOf(causes);
    }

    /** The longest cause chain kept from a Java throwable: the first and the last causes, and a note of the cut. */
    static final int MAX_CAUSES = 100;
    /** How many causes of a chain are kept from its end (the root cause, usually the telling one). */
    private static final int KEPT_FROM_END = 10;
    /** How far a cause chain is followed at all (a hostile getCause() may invent causes forever). */
    private static final int MAX_WALK = 1_000_000;
    private static final int MAX_SUPPRESSED = 10;
    private static final int MAX_MESSAGE = 10_000;
    /** The deepest failure document stored (the distributed trace of a deep hierarchy nests); deeper parts are cut. */
    static final int MAX_DEPTH = 200;
    static final String OMITTED_TYPE = "dev.coop.OmittedCauses";

    /**
     * A failure of a Java throwable raised in {@code source}, with its causes and suppressed exceptions. Always
     * succeeds and is always storable: causes are walked without recursion and stop at a cycle, a chain longer than
     * {@value #MAX_CAUSES} keeps its first and last causes with a note saying how many were cut, messages are cut at
     * {@value #MAX_MESSAGE} characters, and a throwable whose methods throw is described as such.
     */
    public static Failure of(Throwable t, String source) {
        return of(t, source, true);
    }

    private static Failure of(Throwable t, String source, boolean withSuppressed) {
        if (t instanceof CooperationException ce) {
            return ce.failure();
        }
        Map<Throwable, Boolean> seen = new IdentityHashMap<>();
        List<Throwable> chain = new java.util.ArrayList<>();
        Throwable walkedTo = null;
        for (Throwable c = t; c != null && !seen.containsKey(c); c = causeOf(c)) {
            if (chain.size() == MAX_WALK) {
                walkedTo = c;
                break;
            }
            seen.put(c, true);
            chain.add(c);
            if (c instanceof CooperationException) {
                break; // a remote failure: its document already holds its causes
            }
        }
        int omitted = 0;
        List<Throwable> kept = chain;
        if (chain.size() > MAX_CAUSES) {
            omitted = chain.size() - MAX_CAUSES;
            kept = new java.util.ArrayList<>(chain.subList(0, MAX_CAUSES - KEPT_FROM_END));
            kept.add(null); // where the note goes
            kept.addAll(chain.subList(chain.size() - KEPT_FROM_END, chain.size()));
        }
        Failure below = null;
        for (int i = kept.size() - 1; i >= 0; i--) {
            Throwable c = kept.get(i);
            List<Failure> causes = new java.util.ArrayList<>();
            if (below != null) {
                causes.add(below);
            }
            if (c == null) {
                below = new Failure(omitted + " causes omitted" + (walkedTo != null
                        ? " (the chain goes on beyond "
                                + MAX_WALK + ")"
                        : ""), OMITTED_TYPE, source, List.of(), causes);
                continue;
            }
            if (c instanceof CooperationException ce) {
                below = causes.isEmpty() ? ce.failure() : ce.failure().withCauses(causes);
                continue;
            }
            if (withSuppressed) {
                Throwable[] suppressed = suppressedOf(c);
                for (int s = 0; s < Math.min(suppressed.length, MAX_SUPPRESSED); s++) {
                    if (suppressed[s] != null && !seen.containsKey(suppressed[s])) {
                        causes.add(of(suppressed[s], source, false));
                    }
                }
            }
            below = new Failure(messageOf(c), c.getClass().getName(), source, framesOf(c), causes);
        }
        return below;
    }

    private static Throwable causeOf(Throwable t) {
        try {
            return t.getCause();
        } catch (Throwable e) {
            return null;
        }
    }

    private static Throwable[] suppressedOf(Throwable t) {
        try {
            Throwable[] s = t.getSuppressed();
            return s == null ? new Throwable[0] : s;
        } catch (Throwable e) {
            return new Throwable[0];
        }
    }

    private static String messageOf(Throwable t) {
        String m;
        try {
            m = t.getMessage();
        } catch (Throwable e) {
            return "<getMessage() of " + t.getClass().getName() + " threw " + e.getClass().getName() + ">";
        }
        if (m != null && m.length() > MAX_MESSAGE) {
            m = m.substring(0, MAX_MESSAGE) + "... (" + (m.length() - MAX_MESSAGE) + " more characters cut)";
        }
        return m;
    }

    private static List<Frame> framesOf(Throwable t) {
        StackTraceElement[] trace;
        try {
            trace = t.getStackTrace();
        } catch (Throwable e) {
            return List.of();
        }
        List<Frame> frames = new java.util.ArrayList<>();
        for (int i = 0; trace != null && i < Math.min(trace.length, MAX_FRAMES); i++) {
            StackTraceElement e = trace[i];
            if (e == null) {
                continue;
            }
            frames.add(new Frame(e.getFileName() == null ? "<unknown filename>" : e.getFileName(), e.getLineNumber(),
                    e.getClassName(), e.getMethodName()));
        }
        return frames;
    }

    /**
     * This failure cut to at most {@code depth} levels of causes: below that, one note says how many levels were
     * left out. Recursion is bounded by {@code depth}.
     */
    Failure limitedTo(int depth) {
        if (causes == null || causes.isEmpty()) {
            return this;
        }
        if (depth <= 1) {
            Failure copy = new Failure(message, type, source, stackTrace, List.of(new Failure(
                    "deeper causes omitted (failure documents are cut at " + MAX_DEPTH + " levels)", OMITTED_TYPE,
                    source, List.of(), List.of())));
            copy.extensions.putAll(extensions);
            return copy;
        }
        List<Failure> limited = new java.util.ArrayList<>(causes.size());
        boolean changed = false;
        for (Failure c : causes) {
            Failure l = c.limitedTo(depth - 1);
            changed |= l != c;
            limited.add(l);
        }
        if (!changed) {
            return this;
        }
        Failure copy = new Failure(message, type, source, stackTrace, limited);
        copy.extensions.putAll(extensions);
        return copy;
    }

    /** Reads the JSON form; a malformed document is a {@link CoopValidationException}. */
    public static Failure fromJson(String json) {
        try {
            return JSON.readValue(json, Failure.class);
        } catch (Exception e) {
            throw new CoopValidationException("Not a failure document: " + e.getMessage(), e);
        }
    }

    /** The JSON form, including properties written by others that this class does not know. */
    public String toJson() {
        try {
            return JSON.writeValueAsString(limitedTo(MAX_DEPTH));
        } catch (Exception e) {
            throw new IllegalStateException("Cannot serialize failure " + type, e);
        }
    }

    /** The same failure with more causes appended. */
    public Failure withCauses(List<Failure> more) {
        List<Failure> all = new java.util.ArrayList<>(causes());
        all.addAll(more);
        Failure copy = new Failure(message, type, source, stackTrace, all);
        copy.extensions.putAll(extensions);
        return copy;
    }

    /** What happened; {@code <no message>} when the document has none. */
    @JsonIgnore
    public String message() {
        return message == null ? "<no message>" : message;
    }

    /** The failure's type: a class name for Java failures, any string for others; {@code <unknown>} if absent. */
    @JsonIgnore
    public String type() {
        return type == null ? "<unknown>" : type;
    }

    /** Where it happened: {@code saga[engine]}, or whatever the writing service put there. */
    @JsonProperty
    public String source() {
        return source;
    }

    @JsonIgnore
    public List<Frame> stackTrace() {
        return stackTrace == null ? List.of() : stackTrace;
    }

    @JsonIgnore
    public List<Failure> causes() {
        return causes == null ? List.of() : causes;
    }

    // The JSON form writes back exactly what was read: absent stays absent.
    @JsonProperty("message")
    private String jsonMessage() {
        return message;
    }

    @JsonProperty("type")
    private String jsonType() {
        return type;
    }

    @JsonProperty("stackTrace")
    private List<Frame> jsonStackTrace() {
        return stackTrace;
    }

    @JsonProperty("causes")
    private List<Failure> jsonCauses() {
        return causes;
    }

    /** Properties of the JSON document that this class does not model, unchanged. */
    @JsonAnyGetter
    public Map<String, JsonNode> extensions() {
        return extensions;
    }

    @JsonAnySetter
    void extension(String name, JsonNode value) {
        extensions.put(name, value);
    }

    /** Renders the whole chain as a distributed stack trace: each failure with its source, then its causes. */
    public String render() {
        StringBuilder out = new StringBuilder();
        render(out, "", true);
        return out.toString();
    }

    private void render(StringBuilder out, String indent, boolean first) {
        out.append(indent).append(first ? "" : "caused by: ").append(type()).append(": ").append(message());
        if (source != null) {
            out.append("  [in ").append(source).append(']');
        }
        out.append('\n');
        for (Frame f : stackTrace()) {
            out.append(indent).append("    at ").append(f.className() == null ? "" : f.className() + ".")
                    .append(f.functionName()).append('(').append(f.fileName()).append(':').append(f.lineNumber())
                    .append(")\n");
        }
        for (Failure cause : causes()) {
            cause.render(out, indent + "  ", false);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Failure f && Objects.equals(f.message, message) && Objects.equals(f.type, type)
                && Objects.equals(f.source, source) && Objects.equals(f.stackTrace, stackTrace)
                && Objects.equals(f.causes, causes)
                && f.extensions.equals(extensions);
    }

    @Override
    public int hashCode() {
        return Objects.hash(message, type, source);
    }

    @Override
    public String toString() {
        return "[" + source + "] " + type() + ": " + message();
    }
}
