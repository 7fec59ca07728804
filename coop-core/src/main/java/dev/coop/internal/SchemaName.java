package dev.coop.internal;

import dev.coop.CoopValidationException;
import java.util.regex.Pattern;

/**
 * The validated name of the PostgreSQL schema that holds Coop's tables. It is the only identifier Coop puts into
 * SQL text (identifiers cannot be bind parameters), so it is checked strictly: lower-case letters, digits and
 * underscores, starting with a letter or underscore, at most 50 characters.
 */
public record SchemaName(String value) {
    private static final Pattern VALID = Pattern.compile("[a-z_][a-z0-9_]{0,49}");

    public SchemaName {
        if (value == null || !VALID.matcher(value).matches()) {
            throw new CoopValidationException("Invalid schema name '" + value
                    + "': use 1 to 50 lower-case letters, digits or underscores, starting with a letter or underscore");
        }
    }

    /** The LISTEN/NOTIFY channel on which runs of this schema announce that they became runnable. */
    public String channel() {
        return "coop_" + value;
    }

    /** Replaces every {@code {schema}} in a SQL template with this schema name. */
    public String sql(String template) {
        return template.replace("{schema}", value);
    }
}
