package dev.coop.internal.store;

import dev.coop.TimeSource;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

/**
 * The time an engine or client decides by: a {@link TimeSource}, or the database's clock. Statements read it through
 * {@code {now}} (see {@link SchemaName#sql}), one bind parameter each, bound with {@link #bind()}: null means
 * {@code statement_timestamp()}, the database's clock when the statement arrived.
 *
 * <p>Why not {@code clock_timestamp()}: it is volatile, and a volatile function inside an {@code UPDATE} is what a
 * distributed PostgreSQL refuses (Citus: "functions used in UPDATE queries on distributed tables must not be
 * VOLATILE"; docs/scaling.md); it also keeps an index from using a bound on {@code runnable_at} (see
 * {@link ClaimSql#DUE_NOW}). {@code statement_timestamp()} is stable and takes no column, which Citus evaluates once on
 * the coordinator and sends as a constant. Why not the JVM's clock when no source is set: engines and clients on
 * different machines must agree on the time ({@link TimeSource}: by default the database decides), and reading the
 * database's clock in Java would cost a round trip per transaction. The difference to {@code clock_timestamp()} is
 * the statement's own run time (a due time or a finish time that much earlier), which nothing orders by: within a
 * session every statement's stamp is at or after the previous one's, so a run made due by one statement is due for
 * the next (the reclaim after an advance).
 */
public final class Time {
    /** The default: the database's clock, read by each statement that needs it. */
    public static final Time DATABASE = new Time(null);
    /** What {@code {now}} stands for in SQL: the bound time, or the database's clock when none is bound. */
    static final String NOW_SQL = "coalesce(?::timestamptz, statement_timestamp())";

    private final TimeSource source;

    private Time(TimeSource source) {
        this.source = source;
    }

    public static Time of(TimeSource source) {
        return source == null ? DATABASE : new Time(source);
    }

    /** The value for a {@code {now}} parameter: the source's time, or null for the database's clock. */
    public OffsetDateTime bind() {
        if (source == null) {
            return null;
        }
        Instant now = source.now();
        if (now == null) {
            throw new IllegalStateException("The time source " + source + " returned no time (null)");
        }
        return now.atOffset(ZoneOffset.UTC);
    }

    /** The time now: the source's, or the database's clock read on {@code c}. */
    public Instant now(java.sql.Connection c) throws java.sql.SQLException {
        if (source != null) {
            return bind().toInstant();
        }
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT clock_timestamp()");
                java.sql.ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getObject(1, OffsetDateTime.class).toInstant();
        }
    }

    /** Whether a source decides the time (not the database's clock). */
    public boolean controlled() {
        return source != null;
    }

    /** Registers what to run when the source's time jumps; returns what unregisters it. */
    public Runnable onJump(Runnable wake) {
        return source == null ? () -> {
        } : source.onJump(wake);
    }
}
