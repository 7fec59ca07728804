package dev.coop.internal.schedule;

import dev.coop.internal.store.Emission;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Time;
import dev.coop.internal.store.Uuids;

import dev.coop.failure.CoopValidationException;
import dev.coop.MessageId;
import dev.coop.schedule.Schedule;
import dev.coop.schedule.ScheduleSummary;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code schedule} table: creating, replacing, removing and listing schedules (clients), and firing due periods
 * (engines). Every method runs inside the caller's transaction; every time comes from the engine's time ({@link Time}).
 */
public final class Schedules {
    private static final Logger log = LoggerFactory.getLogger(Schedules.class);
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}");
    private static final String COLUMNS = """
            name, topic, payload::text AS payload, kind, period_ms, cron, zone, overlap, paused, next_at, last_due_at,
            last_fired_at, last_message_id, skipped, created_at, updated_at""";

    /** Timing columns: when they change, the next due time is computed again from now. */
    private static final String TIMING = "(%1$s.kind, %1$s.period_ms, %1$s.cron, %1$s.zone, %1$s.paused)";
    /** Every column of the definition: when none changes, replacing a schedule changes nothing. */
    private static final String DEFINITION = "(%1$s.topic, %1$s.payload, %1$s.overlap, %1$s.kind, %1$s.period_ms,"
            + " %1$s.cron, %1$s.zone, %1$s.paused)";

    private final SchemaName schema;
    private final Time time;
    private final String upsertSql;
    private final String claimDueSql;
    /** On Citus: whether the last period's message finished, by its root. */
    private final String lastRunningSql;
    private final String nextDueSql;

    public Schedules(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
        this.upsertSql = schema.sql("""
                INSERT INTO {schema}.schedule AS s (name, topic, payload, kind, period_ms, cron, zone, overlap, paused,
                                                    next_at, created_at, updated_at)
                VALUES (?, ?, ?::jsonb, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE
                   SET topic = excluded.topic, payload = excluded.payload, overlap = excluded.overlap,
                       kind = excluded.kind, period_ms = excluded.period_ms, cron = excluded.cron,
                       zone = excluded.zone, paused = excluded.paused,
                       next_at = CASE WHEN %s IS NOT DISTINCT FROM %s THEN s.next_at ELSE excluded.next_at END,
                       updated_at = CASE WHEN %s IS NOT DISTINCT FROM %s THEN s.updated_at
                                         ELSE excluded.updated_at END
                RETURNING %s""".formatted(TIMING.formatted("s"), TIMING.formatted("excluded"),
                DEFINITION.formatted("s"), DEFINITION.formatted("excluded"), COLUMNS));
        // the due schedule waiting longest; several engines never take the same one (row lock until commit)
        String mayFire = """
                (overlap OR last_message_id IS NULL OR NOT EXISTS (
                   SELECT 1 FROM {schema}.run r
                    WHERE r.message_id = s.last_message_id
                      AND r.status NOT IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED')))""";
        // on Citus the schedule is the coordinator's and run distributed: Citus refuses the join ("direct joins
        // between distributed and local tables are not supported"); null there means: read the last message's runs
        // apart, by its root (a scheduled message is a root: its id is its hierarchy's), routed to its worker
        if (schema.citus()) {
            mayFire = "CASE WHEN overlap OR last_message_id IS NULL THEN true END";
        }
        this.claimDueSql = schema.sql("""
                SELECT %s, {now} AS now,
                       coalesce(last_skipped_at > last_fired_at, false) AS skipping,
                       %s AS may_fire
                  FROM {schema}.schedule s
                 WHERE next_at <= {now}
                 ORDER BY next_at
                 LIMIT 1
                   FOR UPDATE SKIP LOCKED""".formatted(COLUMNS, mayFire));
        this.lastRunningSql = schema.sql("""
                SELECT NOT EXISTS (SELECT 1 FROM {schema}.run r
                                    WHERE r.root_id = ? AND r.message_id = ?
                                      AND r.status NOT IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED'))""");
        this.nextDueSql = schema.sql("""
                SELECT ceil(extract(epoch FROM (min(next_at) - {now})) * 1000)::bigint
                  FROM {schema}.schedule WHERE next_at IS NOT NULL""");
    }

    /** Checks a schedule name: the rules of saga and topic names. */
    public static void validateName(String name) {
        if (name == null) {
            throw new CoopValidationException("Schedule name is missing (null)");
        }
        if (!NAME.matcher(name).matches()) {
            throw new CoopValidationException("Invalid schedule name '" + name
                    + "': use 1 to 200 letters, digits or . _ - : / and start with a letter or digit");
        }
    }

    /**
     * Creates the schedule, or replaces the one of that name. Replacing it with the same times keeps its next due
     * time (so that services may declare their schedules at every start); changed times (or pausing, resuming) make
     * it due again from now.
     */
    public ScheduleSummary upsert(Connection c, String name, String topic, String payloadJson, Schedule schedule)
            throws SQLException {
        Instant now = now(c);
        Instant first = schedule.isPaused() ? null : schedule.firstTime(now);
        if (first == null && !schedule.isPaused()) {
            throw new CoopValidationException("Schedule '" + name + "' would never fire: " + schedule
                    + " has no time after " + now);
        }
        try (PreparedStatement ps = c.prepareStatement(upsertSql)) {
            int i = 0;
            ps.setString(++i, name);
            ps.setString(++i, topic);
            ps.setString(++i, payloadJson);
            ps.setString(++i, schedule.period() != null ? "PERIOD" : "CRON");
            if (schedule.period() != null) {
                ps.setLong(++i, schedule.period().toMillis());
            } else {
                ps.setNull(++i, Types.BIGINT);
            }
            ps.setString(++i, schedule.cron());
            ps.setString(++i, schedule.zone() == null ? null : schedule.zone().getId());
            ps.setBoolean(++i, schedule.allowsOverlap());
            ps.setBoolean(++i, schedule.isPaused());
            setInstant(ps, ++i, first);
            setInstant(ps, ++i, now);
            setInstant(ps, ++i, now);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return summary(rs);
            }
        }
    }

    /** Removes a schedule; the messages it launched go on. */
    public void delete(Connection c, String name) throws SQLException {
        validateName(name);
        try (PreparedStatement ps = c.prepareStatement(schema.sql("DELETE FROM {schema}.schedule WHERE name = ?"))) {
            ps.setString(1, name);
            if (ps.executeUpdate() == 0) {
                throw new CoopValidationException("No schedule '" + name + "' in schema '" + schema.value() + "'");
            }
        }
    }

    /** Every schedule, by name. */
    public List<ScheduleSummary> list(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                schema.sql("SELECT " + COLUMNS + " FROM {schema}.schedule ORDER BY name"));
                ResultSet rs = ps.executeQuery()) {
            List<ScheduleSummary> all = new ArrayList<>();
            while (rs.next()) {
                all.add(summary(rs));
            }
            return all;
        }
    }

    /** What handling one due period did. */
    public record Fired(String schedule, MessageId message, Map<String, Integer> created) {
    }

    /**
     * Handles the due period that waited longest, if any: launches its message on the global scope (unless the
     * previous period's message still runs and overlap is not allowed: then the period is skipped) and moves the
     * schedule to its next due time. The caller commits.
     *
     * @param engine the engine firing, written as the EMITTED event's engine
     * @return null when no schedule is due (or every due one is being handled by another engine)
     */
    public Fired fireNext(Connection c, Store store, String engine) throws SQLException {
        OffsetDateTime bound = time.bind();
        try (PreparedStatement ps = claimDue(c, bound);
                ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) {
                return null;
            }
            String name = rs.getString("name");
            Instant due = rs.getObject("next_at", OffsetDateTime.class).toInstant();
            Instant now = rs.getObject("now", OffsetDateTime.class).toInstant();
            Schedule schedule;
            try {
                schedule = schedule(rs);
            } catch (RuntimeException e) { // a row written by hand or by another version: do not block the others
                log.error("Schedule '{}' cannot be read ({}); it is paused until replaced", name, e.getMessage());
                update(c, "UPDATE {schema}.schedule SET next_at = NULL, paused = true WHERE name = ?", name);
                return new Fired(name, null, Map.of());
            }
            Period period = new Period(name, due, now, schedule.nextTime(due, now));
            Boolean mayFire = rs.getObject("may_fire", Boolean.class);
            if (mayFire == null) { // on Citus: whether the last period's message finished, read by its root
                mayFire = lastFinished(c, rs.getObject("last_message_id", UUID.class));
            }
            if (!mayFire) {
                skip(c, rs, period);
                return new Fired(name, null, Map.of());
            }
            if (schedule.missedSome(due, now)) {
                log.info("Schedule '{}' fires the period due at {} late, at {}; the periods missed meanwhile are not"
                        + " made up", name, due, now);
            }
            Emission emission = new Emission(Uuids.v7(), rs.getString("topic"), rs.getString("payload"));
            Map<String, Integer> created = store.emit(c, null, null, null, null, engine, null, List.of(emission));
            fired(c, period, emission.messageId());
            if (period.next() == null) {
                log.info("Schedule '{}' fired its last time: its cron expression has no time left", name);
            }
            return new Fired(name, new MessageId(emission.messageId()), created);
        }
    }

    /** Whether every run of the last period's message {@code last} (a root message) finished. */
    private boolean lastFinished(Connection c, UUID last) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(lastRunningSql)) {
            ps.setObject(1, last);
            ps.setObject(2, last);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** The period of a schedule being handled: due when, handled when, and the next due time (null: none). */
    private record Period(String name, Instant due, Instant now, Instant next) {
    }

    /** Skips the period: the previous period's message still runs and overlap is not allowed. */
    private void skip(Connection c, ResultSet rs, Period p) throws SQLException {
        UUID last = rs.getObject("last_message_id", UUID.class);
        if (rs.getBoolean("skipping")) {
            log.debug("Schedule '{}' skipped the period due at {}: message {} still runs", p.name(), p.due(), last);
        } else {
            log.info("Schedule '{}' skips its periods until message {} of the period due at {} finished",
                    p.name(), last, rs.getObject("last_due_at", OffsetDateTime.class));
        }
        try (PreparedStatement up = c.prepareStatement(schema.sql("""
                UPDATE {schema}.schedule SET next_at = ?, skipped = skipped + 1, last_skipped_at = ?
                 WHERE name = ?"""))) {
            setInstant(up, 1, p.next());
            setInstant(up, 2, p.now());
            up.setString(3, p.name());
            up.executeUpdate();
        }
    }

    /** Records the period fired: its message, and the next due time. */
    private void fired(Connection c, Period p, UUID message) throws SQLException {
        try (PreparedStatement up = c.prepareStatement(schema.sql("""
                UPDATE {schema}.schedule
                   SET next_at = ?, last_due_at = ?, last_fired_at = ?, last_message_id = ?
                 WHERE name = ?"""))) {
            setInstant(up, 1, p.next());
            setInstant(up, 2, p.due());
            setInstant(up, 3, p.now());
            up.setObject(4, message);
            up.setString(5, p.name());
            up.executeUpdate();
        }
    }

    private PreparedStatement claimDue(Connection c, OffsetDateTime now) throws SQLException {
        PreparedStatement ps = c.prepareStatement(claimDueSql);
        ps.setObject(1, now);
        ps.setObject(2, now);
        return ps;
    }

    /** Milliseconds until the next schedule is due (zero or less: due now), or null when none will be. */
    public Long millisUntilNextDue(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(nextDueSql)) {
            ps.setObject(1, time.bind());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long ms = rs.getLong(1);
                return rs.wasNull() ? null : ms;
            }
        }
    }

    private void update(Connection c, String sql, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(sql))) {
            ps.setString(1, name);
            ps.executeUpdate();
        }
    }

    private static void setInstant(PreparedStatement ps, int index, Instant instant) throws SQLException {
        if (instant == null) {
            ps.setNull(index, Types.TIMESTAMP_WITH_TIMEZONE);
        } else {
            ps.setObject(index, instant.atOffset(ZoneOffset.UTC));
        }
    }

    private Instant now(Connection c) throws SQLException {
        return time.now(c);
    }

    private static Schedule schedule(ResultSet rs) throws SQLException {
        Schedule schedule = "PERIOD".equals(rs.getString("kind"))
                ? Schedule.every(Duration.ofMillis(rs.getLong("period_ms")))
                : Schedule.cron(rs.getString("cron")).inZone(ZoneId.of(rs.getString("zone")));
        if (rs.getBoolean("overlap")) {
            schedule = schedule.allowingOverlap();
        }
        return rs.getBoolean("paused") ? schedule.paused() : schedule;
    }

    private static ScheduleSummary summary(ResultSet rs) throws SQLException {
        UUID last = rs.getObject("last_message_id", UUID.class);
        return new ScheduleSummary(rs.getString("name"), rs.getString("topic"), rs.getString("payload"),
                schedule(rs), rs.getObject("next_at", OffsetDateTime.class),
                rs.getObject("last_due_at", OffsetDateTime.class),
                rs.getObject("last_fired_at", OffsetDateTime.class), last == null ? null : new MessageId(last),
                rs.getLong("skipped"), rs.getObject("created_at", OffsetDateTime.class),
                rs.getObject("updated_at", OffsetDateTime.class));
    }
}
