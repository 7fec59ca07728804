package dev.coop.test;

import dev.coop.Coop;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Reads Coop's tables directly, for assertions that go beyond what a {@code CoopClient} shows: the whole event log of
 * a database, whether any row of a message exists, the state of the run table. Read-only; every value is a bind
 * parameter and the schema name is checked like Coop checks it.
 */
public final class CoopTables {
    private static final Pattern SCHEMA = Pattern.compile("[a-z_][a-z0-9_]{0,49}");

    private final DataSource dataSource;
    private final String schema;

    private CoopTables(DataSource dataSource, String schema) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        if (schema == null || !SCHEMA.matcher(schema).matches()) {
            throw new IllegalArgumentException("Not a Coop schema name: '" + schema + "'");
        }
        this.schema = schema;
    }

    /** The tables in Coop's default schema. */
    public static CoopTables of(DataSource dataSource) {
        return new CoopTables(dataSource, Coop.DEFAULT_SCHEMA);
    }

    /** The tables in {@code schema}. */
    public static CoopTables of(DataSource dataSource, String schema) {
        return new CoopTables(dataSource, schema);
    }

    /** Every event of the schema, in the order it was written (by id). */
    public List<Event> allEvents() {
        return events("SELECT id, message_id, type, saga, engine, step, lineage, created_at, started_at,"
                + " exception::text AS exception, context::text AS context FROM " + schema + ".event ORDER BY id",
                null);
    }

    /** The events whose {@code message_id} is {@code message}, in the order they were written. */
    public List<Event> eventsOfMessage(MessageId message) {
        return events("SELECT id, message_id, type, saga, engine, step, lineage, created_at, started_at,"
                + " exception::text AS exception, context::text AS context FROM " + schema
                + ".event WHERE message_id = ? ORDER BY id", message.value());
    }

    /** How many rows of the message table have this id (0 or 1). */
    public int messageRows(MessageId message) {
        return count("SELECT count(*) FROM " + schema + ".message WHERE id = ?", message.value());
    }

    /** How many events name this message. */
    public int eventRows(MessageId message) {
        return count("SELECT count(*) FROM " + schema + ".event WHERE message_id = ?", message.value());
    }

    /** How many runs handle this message. */
    public int runRows(MessageId message) {
        return count("SELECT count(*) FROM " + schema + ".run WHERE message_id = ?", message.value());
    }

    /** How many runs exist in the schema. */
    public int runCount() {
        return count("SELECT count(*) FROM " + schema + ".run", null);
    }

    /** How many runs of the schema have {@code status}. */
    public int runCount(RunStatus status) {
        return count("SELECT count(*) FROM " + schema + ".run WHERE status = ?", status.name());
    }

    /** The topic a saga is registered for in the topology registry, or null if it is not registered. */
    public String registeredTopic(String saga) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT topic FROM " + schema + ".saga_registration WHERE saga = ?")) {
            ps.setString(1, saga);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read the topology of schema " + schema, e);
        }
    }

    /**
     * Whether nothing is due at {@code now}: no run can be claimed (every unfinished run waits for its children, for
     * a later time, or an operator), no schedule and no join timeout is due. With a {@link TestClock}, await this
     * before {@link TestClock#advance advancing}, so that what the test started has reached its wait first:
     * {@code Await.until("nothing due", timeout, () -> tables.idleAt(clock.now()))}.
     */
    public boolean idleAt(Instant now) {
        String sql = "SELECT (SELECT count(*) FROM " + schema + ".run WHERE status = 'RUNNABLE' AND runnable_at <= ?)"
                + " + (SELECT count(*) FROM " + schema + ".schedule WHERE next_at <= ?)"
                + " + (SELECT count(*) FROM " + schema + ".join_group WHERE status = 'OPEN' AND timeout_at <= ?)";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            java.time.OffsetDateTime at = now.atOffset(java.time.ZoneOffset.UTC);
            for (int i = 1; i <= 3; i++) {
                ps.setObject(i, at);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) == 0;
            }
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read Coop's tables in schema " + schema + ": " + sql, e);
        }
    }

    private int count(String sql, Object parameter) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            if (parameter != null) {
                ps.setObject(1, parameter);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read Coop's tables in schema " + schema + ": " + sql, e);
        }
    }

    private List<Event> events(String sql, UUID parameter) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            if (parameter != null) {
                ps.setObject(1, parameter);
            }
            List<Event> events = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    events.add(new Event(rs.getLong("id"), new MessageId(rs.getObject("message_id", UUID.class)),
                            EventType.valueOf(rs.getString("type")), rs.getString("saga"), rs.getString("engine"),
                            rs.getString("step"),
                            new Lineage(Arrays.asList((UUID[]) rs.getArray("lineage").getArray())),
                            rs.getObject("created_at", OffsetDateTime.class),
                            rs.getObject("started_at", OffsetDateTime.class), rs.getString("exception"),
                            rs.getString("context")));
                }
            }
            return events;
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read the event log of schema " + schema, e);
        }
    }
}
