package dev.coop.internal.store;

import dev.coop.MessageId;
import dev.coop.failure.CoopValidationException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;

/** What a run was given and what it gave back: its message's payload and its result, as stored (JSON text). */
public final class RunData {
    private final SchemaName schema;

    public RunData(SchemaName schema) {
        this.schema = schema;
    }

    /** The payload the message was launched with. */
    public String payload(Connection c, MessageId message) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "SELECT payload::text FROM {schema}.message WHERE id = ?"))) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new CoopValidationException("No message " + message + " in schema '" + schema.value()
                            + "'");
                }
                return rs.getString(1);
            }
        }
    }

    /** The value the run returned (its {@code RunResult}), or null when it returned none or has not finished. */
    public String result(Connection c, UUID run) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("SELECT result FROM {schema}.run WHERE id = ?"))) {
            ps.setObject(1, run);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new CoopValidationException("No run " + run + " in schema '" + schema.value() + "'");
                }
                return rs.getString(1);
            }
        }
    }
}
