package dev.coop.internal.store;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;

/**
 * The functions the Citus layout creates ({@link CitusLayout}, {@link CitusKeys}), created only when missing or
 * different: each start of an engine or client runs the layout, and a {@code CREATE OR REPLACE FUNCTION} each time
 * took a lock on the function and, on Citus, sent the DDL to every worker (a distributed function) while steps ran.
 * A function created here carries a comment: {@code coop:}, the SHA-256 of its {@code CREATE} statement (as sent, with
 * the schema's name) and the MD5 of its definition as the server prints it ({@code pg_get_functiondef}). A start
 * that finds the same comment on the same definition leaves the function alone (two reads of the catalog); a
 * statement edited in a later version, or a function replaced by another text since, is replaced once.
 */
final class CitusFunctions {
    private static final String MARK = "coop:";

    private CitusFunctions() {
    }

    /**
     * Creates the function {@code signature} ({@code {schema}.name(argument types)}) by {@code create} (a {@code
     * CREATE OR REPLACE FUNCTION} of exactly that function) when it is missing or was created by another text.
     *
     * @return whether it was created or replaced
     */
    static boolean ensure(Connection c, SchemaName schema, String signature, String create) throws SQLException {
        String sql = schema.sql(create);
        String function = schema.sql(signature);
        String mark = MARK + sha256(sql) + ":";
        String[] found = read(c, function);
        if (found != null && (mark + found[1]).equals(found[0])) {
            return false;
        }
        try (Statement st = c.createStatement()) {
            st.execute(sql);
        }
        String[] created = read(c, function);
        try (Statement st = c.createStatement()) {
            // COMMENT takes no parameter: the text is "coop:" and hex digits, the name the schema's validated one
            st.execute("COMMENT ON FUNCTION " + function + " IS '" + mark + created[1] + "'");
        }
        return true;
    }

    /**
     * The function's comment and the MD5 of its definition as the server prints it, or null when it is missing. The
     * comment names both, so that a function replaced by another text since (a migration's {@code CREATE OR REPLACE}
     * keeps the comment) is created again.
     */
    private static String[] read(Connection c, String function) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT obj_description(f, 'pg_proc'),"
                + " md5(pg_get_functiondef(f)) FROM to_regprocedure(?) AS f WHERE f IS NOT NULL")) {
            ps.setString(1, function);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? new String[]{rs.getString(1), rs.getString(2)} : null;
            }
        }
    }

    /** The mark's hash: hex digits only. */
    static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
