package dev.coop;

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

    /** A failure of a Java throwable raised in {@code source}, with its causes and suppressed exceptions. */
    public static Failure of(Throwable t, String source) {
        return of(t, source, new IdentityHashMap<>());
    }

    private static Failure of(Throwable t, String source, Map<Throwable, Boolean> seen) {
        if (t instanceof CooperationException ce) {
            return ce.failure();
        }
        seen.put(t, true);
        StackTraceElement[] trace = t.getStackTrace();
        List<Frame> frames = new java.util.ArrayList<>();
        for (int i = 0; i < Math.min(trace.length, MAX_FRAMES); i++) {
            StackTraceElement e = trace[i];
            frames.add(new Frame(e.getFileName() == null ? "<unknown filename>" : e.getFileName(), e.getLineNumber(),
                    e.getClassName(), e.getMethodName()));
        }
        List<Failure> causes = new java.util.ArrayList<>();
        if (t.getCause() != null && !seen.containsKey(t.getCause())) {
            causes.add(of(t.getCause(), source, seen));
        }
        for (Throwable s : t.getSuppressed()) {
            if (!seen.containsKey(s)) {
                causes.add(of(s, source, seen));
            }
        }
        return new Failure(t.getMessage(), t.getClass().getName(), source, frames, causes);
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
            return JSON.writeValueAsString(this);
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
