package dev.coop.internal.store;

/**
 * The wake-up notifications that the statements making runs runnable send themselves (schema version 27: no trigger
 * on {@code run} sends them any more). A run that becomes runnable notifies channel {@code coop_<schema>} with its
 * saga's name, or {@code "<saga> <milliseconds until due>"} when it is due later, so that idle engines elsewhere set
 * a timer instead of polling. An engine's own statements stay quiet for the runs it wakes in-process after its commit
 * (its own saga versions, due now): a notification for them would only make every committing transaction queue on
 * PostgreSQL's notification lock and wake the same engine a second time. Which versions those are is bound as one
 * parameter, {@code "<saga>@<version>"} entries separated by commas (saga names cannot contain commas); an empty
 * list (a client without an engine, an operator) notifies every runnable run. PostgreSQL sends a transaction's
 * identical notifications once, so a fan-out notifies each saga once.
 */
public final class Wakes {
    private Wakes() {
    }

    /** The payload of the wake-up of run {@code r} (an alias with its columns {@code saga} and {@code runnable_at}). */
    public static String payload(String r) {
        return "CASE WHEN " + r + ".runnable_at <= clock_timestamp() THEN " + r + ".saga ELSE " + r + ".saga || ' ' || "
                + "ceil(extract(epoch FROM (" + r + ".runnable_at - clock_timestamp())) * 1000)::bigint::text END";
    }

    /**
     * Whether runnable run {@code r} needs a notification: it is due later, or its saga version is not one the
     * committing engine wakes itself ({@code local}: an SQL expression of the comma-separated list, e.g. {@code ?}).
     * {@code r} has {@code saga}, {@code saga_version} and {@code runnable_at}.
     */
    static String needed(String r, String local) {
        return "(" + r + ".runnable_at > clock_timestamp() OR " + r + ".saga || '@' || " + r + ".saga_version::text"
                + " <> ALL (coalesce(string_to_array(" + local + ", ','), '{}')))";
    }

    /** What an operator's or a client's statement binds as the local list: none, every runnable run notifies. */
    public static final String NONE_LOCAL = "NULL::text";

    /**
     * A CTE {@code name} that notifies every runnable row of {@code rows} (a CTE returning {@code status}, {@code
     * saga}, {@code saga_version} and {@code runnable_at}) that needs it ({@link #needed}, the local list read from
     * {@code local}). It returns one row, how many it notified: the statement must read it (a CTE that only selects
     * runs only when read), e.g. as {@code FROM rows, name}.
     */
    public static String notifying(String name, String rows, String local) {
        return name + " AS ( -- wake-ups for the engines that need them (schema version 27)\n"
                + "  SELECT count(pg_notify('coop_{schema}', " + payload("w") + ")) AS notified FROM " + rows + " w\n"
                + "   WHERE w.status = 'RUNNABLE' AND " + needed("w", local) + "\n)";
    }

    /**
     * The wake-up payload of a run this engine's advance leaves runnable at a later time, as Java decides it (the run
     * is the engine's own: due now, it is woken in-process and needs none), or null.
     *
     * @param now the statement's time ({@link Time#bind()}), or null for the database's clock (read here as Java's)
     */
    static String later(String saga, long delayMillis, java.time.OffsetDateTime runnableAt,
            java.time.OffsetDateTime now) {
        long millis;
        if (delayMillis > 0) {
            millis = delayMillis;
        } else if (runnableAt != null) {
            java.time.Instant from = now == null ? java.time.Instant.now() : now.toInstant();
            millis = runnableAt.toInstant().toEpochMilli() - from.toEpochMilli();
        } else {
            return null;
        }
        return millis > 0 ? saga + " " + millis : null;
    }
}
