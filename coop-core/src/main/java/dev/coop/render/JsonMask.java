package dev.coop.render;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.coop.failure.CoopValidationException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * What payloads, results and context values show of fields that hold secrets: the value of every object field whose
 * name matches one of the declared patterns becomes {@code "***"}, at any depth. A pattern is a field name, compared
 * without regard to case, in which {@code *} stands for any characters ({@code password}, {@code *token*},
 * {@code card*}). Immutable and thread-safe.
 */
public final class JsonMask {
    /** What masked values become. */
    public static final String MASKED = "***";
    /** Masks nothing. */
    public static final JsonMask NONE = new JsonMask(List.of());
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Pattern VALID = Pattern.compile("[A-Za-z0-9_.$@*-]{1,100}");

    private final List<String> patterns;
    private final List<Pattern> compiled;

    private JsonMask(List<String> patterns) {
        this.patterns = List.copyOf(patterns);
        this.compiled = patterns.stream().map(JsonMask::compile).toList();
    }

    /**
     * A mask of these field-name patterns.
     *
     * @throws CoopValidationException naming a pattern that is blank, longer than 100 characters, or holds other
     *         characters than letters, digits, {@code _ . $ @ -} and {@code *}
     */
    public static JsonMask of(Collection<String> patterns) {
        List<String> valid = new ArrayList<>();
        for (String p : patterns) {
            if (p == null || !VALID.matcher(p).matches()) {
                throw new CoopValidationException("A masked field pattern must be 1 to 100 letters, digits, '_', '.',"
                        + " '$', '@', '-' or '*', was " + (p == null ? "null" : "'" + p + "'"));
            }
            valid.add(p);
        }
        return new JsonMask(valid);
    }

    /** Parses a comma-separated list ({@code "password,*token*"}); blank means none. */
    public static JsonMask parse(String list) {
        if (list == null || list.isBlank()) {
            return NONE;
        }
        return of(java.util.Arrays.stream(list.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList());
    }

    /** The patterns, as declared. */
    public List<String> patterns() {
        return patterns;
    }

    /** Whether a field of this name is masked. */
    public boolean masks(String field) {
        for (Pattern p : compiled) {
            if (p.matcher(field).matches()) {
                return true;
            }
        }
        return false;
    }

    /** The JSON text with masked fields' values replaced; text that is not JSON comes back as it is. */
    public String apply(String json) {
        if (json == null || compiled.isEmpty()) {
            return json;
        }
        try {
            JsonNode tree = MAPPER.readTree(json);
            return tree == null ? json : MAPPER.writeValueAsString(apply(tree));
        } catch (JsonProcessingException notJson) {
            return json;
        }
    }

    /** The tree, changed in place: masked fields' values replaced, at any depth (without recursion). */
    public JsonNode apply(JsonNode tree) {
        if (compiled.isEmpty()) {
            return tree;
        }
        ArrayDeque<JsonNode> todo = new ArrayDeque<>();
        todo.push(tree);
        while (!todo.isEmpty()) {
            JsonNode n = todo.pop();
            if (n instanceof ObjectNode o) {
                for (Map.Entry<String, JsonNode> e : o.properties()) {
                    if (masks(e.getKey())) {
                        e.setValue(TextNode.valueOf(MASKED));
                    } else {
                        todo.push(e.getValue());
                    }
                }
            } else if (n instanceof ArrayNode a) {
                a.forEach(todo::push);
            }
        }
        return tree;
    }

    private static Pattern compile(String glob) { // "a*b" -> \Qa\E.*\Qb\E
        return Pattern.compile(java.util.Arrays.stream(glob.split("\\*", -1))
                .map(part -> part.isEmpty() ? "" : Pattern.quote(part))
                .collect(java.util.stream.Collectors.joining(".*")), Pattern.CASE_INSENSITIVE | Pattern.UNICODE_CASE);
    }
}
