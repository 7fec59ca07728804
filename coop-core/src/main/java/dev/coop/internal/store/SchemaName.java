package dev.coop.internal.store;

import dev.coop.failure.CoopValidationException;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The validated name of the PostgreSQL schema that holds Coop's tables. It is the only identifier Coop puts into
 * SQL text (identifiers cannot be bind parameters), so it is checked strictly: lower-case letters, digits and
 * underscores, starting with a letter or underscore, at most 50 characters.
 */
public record SchemaName(String value, boolean citus) {
    private static final Pattern VALID = Pattern.compile("[a-z_][a-z0-9_]{0,49}");

    /**
     * PostgreSQL's reserved key words (categories R and T of {@code pg_get_keywords()}): unquoted, they cannot name a
     * schema, so {@code select.run} would be a syntax error deep inside the migration.
     */
    private static final Set<String> RESERVED = Set.of("all", "analyse", "analyze", "and", "any", "array", "as", "asc",
            "asymmetric", "authorization", "binary", "both", "case", "cast", "check", "collate", "collation", "column",
            "concurrently", "constraint", "create", "cross", "current_catalog", "current_date", "current_role",
            "current_schema", "current_time", "current_timestamp", "current_user", "default", "deferrable", "desc",
            "distinct", "do", "else", "end", "except", "false", "fetch", "for", "foreign", "freeze", "from", "full",
            "grant", "group", "having", "ilike", "in", "initially", "inner", "intersect", "into", "is", "isnull",
            "join", "lateral", "leading", "left", "like", "limit", "localtime", "localtimestamp", "natural", "not",
            "notnull", "null", "offset", "on", "only", "or", "order", "outer", "overlaps", "placing", "primary",
            "references", "returning", "right", "select", "session_user", "similar", "some", "symmetric",
            "system_user", "table", "tablesample", "then", "to", "trailing", "true", "union", "unique", "user",
            "using", "variadic", "verbose", "when", "where", "window", "with");

    /** A schema on plain PostgreSQL. */
    public SchemaName(String value) {
        this(value, false);
    }

    /**
     * This schema with the Citus layout ({@link CitusLayout}): its {@code {now}} is {@code now_or(?)}, which Citus
     * evaluates on the coordinator once per statement, where it refuses {@code coalesce(?, statement_timestamp())}
     * in an {@code UPDATE} ("non-IMMUTABLE functions are not allowed in CASE or COALESCE statements").
     */
    public SchemaName onCitus() {
        return new SchemaName(value, true);
    }

    public SchemaName {
        if (value == null || !VALID.matcher(value).matches()) {
            throw new CoopValidationException("Invalid schema name '" + value
                    + "': use 1 to 50 lower-case letters, digits or underscores, starting with a letter or underscore");
        }
        if (RESERVED.contains(value)) {
            throw new CoopValidationException("Invalid schema name '" + value + "': it is a reserved word in SQL;"
                    + " choose another, e.g. 'coop_" + value + "'");
        }
    }

    /** The LISTEN/NOTIFY channel on which runs of this schema announce that they became runnable. */
    public String channel() {
        return "coop_" + value;
    }

    /**
     * Replaces every {@code {schema}} in a SQL template with this schema name, and every {@code {now}} with the
     * engine's time: one bind parameter each, bound with {@link Time#bind()}.
     */
    public String sql(String template) {
        return (citus ? CitusLayout.onCitus(template) : template.replace("{now}", Time.NOW_SQL))
                .replace("{schema}", value)
                .replace(ClaimSql.IDLE_IN_TRANSACTION, "NULL::text"); // not set by its caller: the server's setting
    }
}
