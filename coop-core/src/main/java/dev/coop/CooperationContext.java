package dev.coop;

import dev.coop.failure.CoopValidationException;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * The immutable context a run carries from step to step and hands down to the runs it causes, never up. Entries are
 * named JSON values: typed ones read and written through a {@link ContextKey}, and entries the running code does not
 * know, which are kept byte for byte. Changes return a new context.
 *
 * <p>
 * Propagation: a launch's context becomes the first step's context; a child starts with its parent's context at the
 * moment of launch plus the context given to that launch; what a step sets persists to the run's later steps and to
 * the children launched after it. A compensation sees its run's last context combined with the parent's context at
 * rollback time, the parent winning. {@link Deadlines} are entries too, but two deadlines never replace each other:
 * the earlier one wins.
 */
public final class CooperationContext {
    private static final ObjectMapper DEFAULT_MAPPER = Coop.defaultObjectMapper();
    private static final JsonFactory FACTORY = new JsonFactory();
    private static final CooperationContext EMPTY = new CooperationContext(new TreeMap<>(), DEFAULT_MAPPER);

    private final TreeMap<String, String> entries; // name -> the value's JSON text, exactly as written
    private final ObjectMapper mapper;

    private CooperationContext(TreeMap<String, String> entries, ObjectMapper mapper) {
        this.entries = entries;
        this.mapper = mapper;
    }

    /** The context without entries. */
    public static CooperationContext empty() {
        return EMPTY;
    }

    /** A context with one entry. */
    public static <T> CooperationContext of(ContextKey<T> key, T value) {
        return EMPTY.with(key, value);
    }

    /** The value of {@code key}, read as its type; empty when absent or JSON null. */
    public <T> Optional<T> get(ContextKey<T> key) {
        Objects.requireNonNull(key, "key");
        String json = entries.get(key.name());
        if (json == null) {
            return Optional.empty();
        }
        try {
            return Optional.ofNullable(mapperFor(key.name()).readValue(json, key.type()));
        } catch (JsonProcessingException e) {
            throw new CoopValidationException("Context entry '" + key.name() + "' cannot be read as "
                    + key.type().getName() + ": " + e.getOriginalMessage() + " (its JSON: " + abbreviate(json) + ")",
                    e);
        }
    }

    /**
     * A context with {@code key} set to {@code value} (JSON null for a null value). For a {@link Deadlines} key, the
     * earlier of the present deadline and {@code value} wins.
     */
    public <T> CooperationContext with(ContextKey<T> key, T value) {
        Objects.requireNonNull(key, "key");
        if (value == null && Deadlines.isDeadline(key.name())) {
            throw new CoopValidationException("Deadline '" + key.name() + "' cannot be set to null (removed), only "
                    + "tightened");
        }
        if (value instanceof Deadline d && Deadlines.isDeadline(key.name())) {
            Deadline present = deadline(key.name());
            if (present != null) {
                value = key.type().cast(present.tightenedBy(d));
            }
        }
        String json;
        try {
            json = mapperFor(key.name()).writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new CoopValidationException("Value of type " + value.getClass().getName() + " for context key '"
                    + key.name() + "' cannot be serialized to JSON: " + e.getOriginalMessage(), e);
        }
        return withRaw(key.name(), json);
    }

    /** A context with the entry {@code name} set to the JSON text {@code json}, kept as it is. */
    public CooperationContext withRawJson(String name, String json) {
        ContextKey.validateName(name);
        Objects.requireNonNull(json, "json of context entry '" + name + "'");
        validateJsonValue(name, json);
        if (Deadlines.isDeadline(name)) {
            Deadline d = readDeadline(name, json);
            return with(new ContextKey<>(name, Deadline.class), d);
        }
        return withRaw(name, json);
    }

    /** A context without the entry {@code name}. Deadlines cannot be removed (children could loosen them). */
    public CooperationContext without(String name) {
        if (name != null && Deadlines.isDeadline(name)) {
            throw new CoopValidationException("Deadline '" + name + "' cannot be removed from a context, only "
                    + "tightened");
        }
        if (!entries.containsKey(name)) {
            return this;
        }
        TreeMap<String, String> copy = new TreeMap<>(entries);
        copy.remove(name);
        return new CooperationContext(copy, mapper);
    }

    /**
     * This context with every entry of {@code other} added, {@code other} winning on common names, except
     * deadlines, where the earlier one wins.
     */
    public CooperationContext plus(CooperationContext other) {
        Objects.requireNonNull(other, "other");
        if (other.entries.isEmpty()) {
            return this;
        }
        CooperationContext result = this;
        for (Map.Entry<String, String> e : other.entries.entrySet()) {
            result = Deadlines.isDeadline(e.getKey())
                    ? result.with(new ContextKey<>(e.getKey(), Deadline.class), readDeadline(e.getKey(), e.getValue()))
                    : result.withRaw(e.getKey(), e.getValue());
        }
        return result;
    }

    /** Whether the context has an entry named {@code name}. */
    public boolean contains(String name) {
        return entries.containsKey(name);
    }

    /** The names of all entries, sorted. */
    public Set<String> names() {
        return Collections.unmodifiableSet(entries.keySet());
    }

    /** The JSON text of the entry {@code name}, exactly as stored. */
    public Optional<String> rawJson(String name) {
        return Optional.ofNullable(entries.get(name));
    }

    public boolean isEmpty() {
        return entries.isEmpty();
    }

    /** The context as one JSON object; entries sorted by name, values byte for byte as written. */
    public String toJson() {
        StringBuilder sb = new StringBuilder(64).append('{');
        for (Map.Entry<String, String> e : entries.entrySet()) {
            if (sb.length() > 1) {
                sb.append(',');
            }
            try {
                sb.append(DEFAULT_MAPPER.writeValueAsString(e.getKey()));
            } catch (JsonProcessingException ex) {
                throw new IllegalStateException(ex);
            }
            sb.append(':').append(e.getValue());
        }
        return sb.append('}').toString();
    }

    /** Reads a context written by {@link #toJson()} (or any JSON object); null or blank means empty. */
    public static CooperationContext fromJson(String json) {
        return fromJson(json, DEFAULT_MAPPER);
    }

    /**
     * Reads a context, keeping each value's JSON text exactly; typed values are read and written with
     * {@code mapper}.
     */
    public static CooperationContext fromJson(String json, ObjectMapper mapper) {
        if (json == null || json.isBlank()) {
            return new CooperationContext(new TreeMap<>(), mapper);
        }
        TreeMap<String, String> entries = new TreeMap<>();
        try (JsonParser p = FACTORY.createParser(json)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new CoopValidationException("A context must be a JSON object, got: " + abbreviate(json));
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                p.nextToken();
                int start = (int) p.currentTokenLocation().getCharOffset();
                p.skipChildren();
                p.finishToken(); // strings are read lazily: read to the end of the value
                int end = (int) p.currentLocation().getCharOffset();
                entries.put(name, json.substring(start, end));
            }
            if (p.nextToken() != null) {
                throw new CoopValidationException("Unexpected content after the context object: "
                        + abbreviate(json));
            }
        } catch (IOException e) {
            throw new CoopValidationException("Context is not valid JSON: " + e.getMessage(), e);
        }
        return new CooperationContext(entries, mapper);
    }

    /** The same entries, read and written with {@code mapper} (Coop uses the engine's). */
    public CooperationContext withMapper(ObjectMapper mapper) {
        return mapper == this.mapper ? this : new CooperationContext(entries, Objects.requireNonNull(mapper));
    }

    private CooperationContext withRaw(String name, String json) {
        if (json.equals(entries.get(name))) {
            return this;
        }
        TreeMap<String, String> copy = new TreeMap<>(entries);
        copy.put(name, json);
        return new CooperationContext(copy, mapper);
    }

    /** Deadlines are Coop's own values: always read and written with Coop's mapper (java.time support). */
    private ObjectMapper mapperFor(String name) {
        return Deadlines.isDeadline(name) ? DEFAULT_MAPPER : mapper;
    }

    private Deadline deadline(String name) {
        String json = entries.get(name);
        return json == null ? null : readDeadline(name, json);
    }

    private Deadline readDeadline(String name, String json) {
        try {
            return DEFAULT_MAPPER.readValue(json, Deadline.class);
        } catch (JsonProcessingException e) {
            throw new CoopValidationException("Context entry '" + name + "' is not a deadline: "
                    + e.getOriginalMessage(), e);
        }
    }

    private static void validateJsonValue(String name, String json) {
        try (JsonParser p = FACTORY.createParser(json)) {
            if (p.nextToken() == null) {
                throw new CoopValidationException("Context entry '" + name + "' has no JSON value");
            }
            p.skipChildren();
            if (p.nextToken() != null) {
                throw new CoopValidationException("Context entry '" + name + "' has more than one JSON value: "
                        + abbreviate(json));
            }
        } catch (IOException e) {
            throw new CoopValidationException("Context entry '" + name + "' is not valid JSON: " + e.getMessage(),
                    e);
        }
    }

    private static String abbreviate(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "...";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CooperationContext c && entries.equals(c.entries);
    }

    @Override
    public int hashCode() {
        return entries.hashCode();
    }

    @Override
    public String toString() {
        return toJson();
    }
}
