package dev.coop;

import dev.coop.failure.CoopValidationException;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The name and value type of a {@link CooperationContext} entry. Values are stored as JSON (written and read with
 * the engine's Jackson mapper), so records, lists, maps and polymorphic types annotated for Jackson all work.
 *
 * @param name 1 to 200 letters, digits or {@code . _ - : /}; names starting with {@code coop.} are Coop's own
 * @param type the value's type
 */
public record ContextKey<T>(String name, Class<T> type) {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}");
    static final String RESERVED_PREFIX = "coop.";

    public ContextKey {
        validateName(name);
        Objects.requireNonNull(type, "type of context key '" + name + "'");
    }

    /** A key named {@code name} whose values are of {@code type}. */
    public static <T> ContextKey<T> of(String name, Class<T> type) {
        if (name != null && name.startsWith(RESERVED_PREFIX)) {
            throw new CoopValidationException("Context key '" + name + "' starts with '" + RESERVED_PREFIX
                    + "', which is reserved for Coop's own entries (deadlines); choose another name");
        }
        return new ContextKey<>(name, type);
    }

    static void validateName(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new CoopValidationException("Invalid context key '" + name
                    + "': use 1 to 200 letters, digits or . _ - : / and start with a letter or digit");
        }
    }
}
