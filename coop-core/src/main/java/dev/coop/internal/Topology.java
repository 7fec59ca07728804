package dev.coop.internal;

import dev.coop.CoopClient;
import dev.coop.Saga;

import dev.coop.failure.CoopValidationException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;

/**
 * The topology registry in PostgreSQL: which saga handles which topic. An emitting step waits for every saga
 * registered for the topic at the moment it emits, wherever that saga's engines run, even when they are all down.
 */
public final class Topology {
    private final SchemaName schema;

    public Topology(SchemaName schema) {
        this.schema = schema;
    }

    /**
     * Records that {@code engine} runs these sagas (saga name to topic name). A saga name registered for another
     * topic is refused: retire it first.
     */
    public void register(Connection c, String engine, Map<String, String> sagaTopics) throws SQLException {
        String upsert = schema
                .sql("""
                        INSERT INTO {schema}.saga_registration (saga, topic, last_engine) VALUES (?, ?, ?)
                        ON CONFLICT (saga) DO UPDATE SET last_engine = EXCLUDED.last_engine, last_seen_at = clock_timestamp()
                         WHERE saga_registration.topic = EXCLUDED.topic
                        RETURNING topic
                        """);
        for (Map.Entry<String, String> e : sagaTopics.entrySet()) {
            try (PreparedStatement ps = c.prepareStatement(upsert)) {
                ps.setString(1, e.getKey());
                ps.setString(2, e.getValue());
                ps.setString(3, engine);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        throw new CoopValidationException("Saga '" + e.getKey()
                                + "' is registered for topic '"
                                + topicOf(c, e.getKey()) + "' in schema '" + schema.value()
                                + "', not for topic '"
                                + e.getValue()
                                + "'; retire it first (CoopClient.retireSaga) or choose another saga name");
                    }
                }
            }
        }
    }

    private String topicOf(Connection c, String saga) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                schema.sql("SELECT topic FROM {schema}.saga_registration WHERE saga = ?"))) {
            ps.setString(1, saga);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : "?";
            }
        }
    }

    /** Removes a saga from the registry: messages emitted from now on no longer wait for it. */
    public boolean retire(Connection c, String saga) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                schema.sql("DELETE FROM {schema}.saga_registration WHERE saga = ?"))) {
            ps.setString(1, saga);
            return ps.executeUpdate() > 0;
        }
    }

    public void engineStarted(Connection c, String engine, String name, String host, List<String> sagas)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                schema.sql("INSERT INTO {schema}.engine (id, name, host, sagas) VALUES (?, ?, ?, ?)"))) {
            ps.setString(1, engine);
            ps.setString(2, name);
            ps.setString(3, host);
            ps.setArray(4, c.createArrayOf("text", sagas.toArray()));
            ps.executeUpdate();
        }
    }

    public void engineStopped(Connection c, String engine) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                schema.sql("UPDATE {schema}.engine SET stopped_at = clock_timestamp() WHERE id = ?"))) {
            ps.setString(1, engine);
            ps.executeUpdate();
        }
    }
}
