package dev.coop.internal.store;

import dev.coop.ContextKey;
import dev.coop.Coop;
import dev.coop.CooperationContext;
import dev.coop.Deadline;
import dev.coop.Deadlines;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.failure.CoopValidationException;
import dev.coop.Topic;
import java.nio.charset.StandardCharsets;

/** Payload serialization with Jackson, with a size limit checked before anything is written. */
public final class Json {
    private final ObjectMapper mapper;
    private final int maxPayloadBytes;

    public Json(ObjectMapper mapper, int maxPayloadBytes) {
        this(mapper, maxPayloadBytes, java.util.List.of());
    }

    /**
     * Payloads are read and written with a copy of {@code mapper} (the caller's stays as it is) whose read limits
     * accept everything the write limit lets through (a single string may be as long as a whole payload), and which,
     * unless the mapper already has a validator of its own, instantiates polymorphic types named by class
     * ({@code @JsonTypeInfo(use = CLASS)}) only from the packages in {@code polymorphicPrefixes}: otherwise any
     * producer could make the engine instantiate any class on its classpath.
     */
    public Json(ObjectMapper mapper, int maxPayloadBytes, java.util.List<String> polymorphicPrefixes) {
        this.mapper = hardened(mapper, maxPayloadBytes, polymorphicPrefixes);
        this.maxPayloadBytes = maxPayloadBytes;
    }

    private static ObjectMapper hardened(ObjectMapper mapper, int maxPayloadBytes, java.util.List<String> prefixes) {
        ObjectMapper copy;
        try {
            copy = mapper.copy();
        } catch (IllegalStateException cannotCopy) { // a subclass without copy(): use it as it is
            return mapper;
        }
        var read = copy.getFactory().streamReadConstraints();
        copy.getFactory().setStreamReadConstraints(com.fasterxml.jackson.core.StreamReadConstraints.builder()
                .maxStringLength(Math.max(read.getMaxStringLength(), maxPayloadBytes))
                .maxNumberLength(Math.max(read.getMaxNumberLength(), maxPayloadBytes))
                .maxNestingDepth(read.getMaxNestingDepth()).maxDocumentLength(read.getMaxDocumentLength())
                .build());
        if (copy.getPolymorphicTypeValidator() instanceof com.fasterxml.jackson.databind.jsontype.impl.LaissezFaireSubTypeValidator) {
            var ptv = com.fasterxml.jackson.databind.jsontype.BasicPolymorphicTypeValidator.builder();
            for (String prefix : prefixes) {
                ptv.allowIfSubType(prefix);
            }
            copy.setPolymorphicTypeValidator(ptv.build());
        }
        return copy;
    }

    /** Coop's default mapper: java.time support, ISO dates, unknown properties ignored (payloads evolve). */
    public static ObjectMapper defaultMapper() {
        return dev.coop.Coop.defaultObjectMapper();
    }

    public ObjectMapper mapper() {
        return mapper;
    }

    /** Serializes a payload for {@code topic}, refusing nulls, unserializable values and oversized payloads. */
    public String writePayload(Topic<?> topic, Object payload) {
        if (payload == null) {
            throw new CoopValidationException(
                    "Payload for topic '" + topic.name() + "' is null; send an empty object instead");
        }
        String json;
        try {
            json = mapper.writeValueAsString(payload);
        } catch (JsonProcessingException e) {
            throw new CoopValidationException(
                    "Payload of type " + payload.getClass().getName() + " for topic '"
                            + topic.name() + "' cannot be serialized to JSON: " + e.getOriginalMessage(),
                    e);
        }
        int surrogate = InputLimits.loneSurrogateAt(json);
        if (surrogate >= 0) {
            throw new CoopValidationException("Payload for topic '" + topic.name() + "' contains an unpaired UTF-16"
                    + " surrogate (\\u" + Integer.toHexString(json.charAt(surrogate)).toUpperCase(java.util.Locale.ROOT)
                    + ") at character " + surrogate + " of its JSON; PostgreSQL cannot store it and would replace it"
                    + " with '?'");
        }
        if (containsNul(json)) {
            throw new CoopValidationException("Payload for topic '" + topic.name()
                    + "' contains a NUL character (\\u0000), which PostgreSQL cannot store in jsonb");
        }
        if (json.length() > maxPayloadBytes / 4) { // cheap pre-check: a UTF-8 char takes at most 4 bytes
            int bytes = json.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > maxPayloadBytes) {
                throw new CoopValidationException("Payload for topic '" + topic.name() + "' is " + bytes
                        + " bytes of JSON, over the limit of " + maxPayloadBytes
                        + " bytes (setting maxPayloadBytes)");
            }
        }
        return json;
    }

    /** True when the JSON text has an escaped NUL ({@code \u0000}) that is not itself an escaped backslash. */
    public static boolean containsNul(String json) {
        for (int i = json.indexOf("\\u0000"); i >= 0; i = json.indexOf("\\u0000", i + 1)) {
            int backslashes = 0;
            for (int j = i; j >= 0 && json.charAt(j) == '\\'; j--) {
                backslashes++;
            }
            if (backslashes % 2 == 1) {
                return true;
            }
        }
        return false;
    }

    /** Reads a stored payload as {@code type}. */
    public <P> P readPayload(String json, Class<P> type) throws JsonProcessingException {
        return mapper.readValue(json, type);
    }

    public String write(Object value) {
        try {
            return mapper.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("Cannot serialize " + value.getClass().getName(), e);
        }
    }

    /** Serializes a value Coop stores for the user (a result), with the payload checks; {@code what} names it. */
    public String writeValue(String what, Object value) {
        String json;
        try {
            json = mapper.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new CoopValidationException("The " + what + " (type " + (value == null
                    ? "null"
                    : value.getClass()
                            .getName())
                    + ") cannot be serialized to JSON: " + e.getOriginalMessage(), e);
        }
        checkStorable(what, json);
        return json;
    }

    /** A context as stored: null when empty, else its JSON text, checked like payloads. */
    public String writeContext(dev.coop.CooperationContext context) {
        if (context == null || context.isEmpty()) {
            return null;
        }
        String json = context.toJson();
        checkStorable("cooperation context", json);
        return json;
    }

    /** Coop's own context entries; any other name with the reserved prefix is refused at launch. */
    private static final java.util.List<dev.coop.ContextKey<dev.coop.Deadline>> COOP_ENTRIES = java.util.List
            .of(dev.coop.Deadlines.HAPPY_PATH, dev.coop.Deadlines.ROLLBACK_PATH, dev.coop.Deadlines.ABSOLUTE);

    /**
     * Refuses, when a message is launched, a context that would fail later (when a step reads it): invalid entry
     * names (e.g. read with {@code CooperationContext.fromJson}), names with Coop's reserved {@code coop.} prefix that
     * are not Coop's, and deadline entries that are not deadlines.
     */
    public void checkLaunchContext(dev.coop.CooperationContext context) {
        for (String name : context.names()) {
            new dev.coop.ContextKey<>(name, Object.class); // validates the name
            if (!name.startsWith("coop.")) {
                continue;
            }
            if (name.equals(dev.coop.EngineListener.TRACE_PARENT)) {
                if (!context.rawJson(name).orElse("").startsWith("\"")) {
                    throw new CoopValidationException("Context entry '" + name + "' must be a W3C traceparent"
                            + " string, was " + context.rawJson(name).orElse(""));
                }
                continue;
            }
            var key = COOP_ENTRIES.stream().filter(k -> k.name().equals(name)).findFirst()
                    .orElseThrow(() -> new CoopValidationException("Context entry '" + name + "' uses the prefix"
                            + " 'coop.', which is reserved for Coop's own entries "
                            + COOP_ENTRIES.stream().map(dev.coop.ContextKey::name).toList() + " and '"
                            + dev.coop.EngineListener.TRACE_PARENT + "'"));
            try {
                context.get(key);
            } catch (RuntimeException e) {
                throw new CoopValidationException("Context entry '" + name + "' is not a deadline: "
                        + e.getMessage(), e);
            }
        }
    }

    /** Reads a stored context with this mapper. */
    public dev.coop.CooperationContext readContext(String json) {
        return dev.coop.CooperationContext.fromJson(json, mapper);
    }

    private void checkStorable(String what, String json) {
        if (containsNul(json)) {
            throw new CoopValidationException("The " + what
                    + " contains a NUL character (\\u0000), which PostgreSQL cannot store");
        }
        if (json.length() > maxPayloadBytes / 4) {
            int bytes = json.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > maxPayloadBytes) {
                throw new CoopValidationException("The " + what + " is " + bytes + " bytes of JSON, over the limit of "
                        + maxPayloadBytes + " bytes (setting maxPayloadBytes)");
            }
        }
    }
}
