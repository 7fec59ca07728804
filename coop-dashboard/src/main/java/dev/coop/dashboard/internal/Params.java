package dev.coop.dashboard.internal;

import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** Query parameters, parsed and validated; a bad one is refused with a message naming it. */
final class Params {
    private Params() {
    }

    static String text(Exchange ex, String name) {
        String v = ex.query(name);
        return v == null || v.isBlank() ? null : v.strip();
    }

    static MessageId message(Exchange ex, String name) {
        String v = required(ex, name);
        try {
            return new MessageId(UUID.fromString(v));
        } catch (IllegalArgumentException e) {
            throw new Handler.BadRequest(400, "'" + name + "' is not a message id: '" + v + "'");
        }
    }

    /** A lineage written as its ids separated by commas or dots. */
    static Lineage lineage(Exchange ex, String name) {
        String v = required(ex, name);
        List<UUID> ids = new ArrayList<>();
        for (String part : v.split("[,.]")) {
            try {
                ids.add(UUID.fromString(part.strip()));
            } catch (IllegalArgumentException e) {
                throw new Handler.BadRequest(400, "'" + name + "' is not a lineage (ids separated by commas): '"
                        + v + "'");
            }
        }
        return new Lineage(ids);
    }

    static UUID uuid(String name, String v) {
        try {
            return UUID.fromString(v);
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new Handler.BadRequest(400, "'" + name + "' is not an id: '" + v + "'");
        }
    }

    static RunStatus status(String v) {
        try {
            return RunStatus.valueOf(v.toUpperCase());
        } catch (IllegalArgumentException e) {
            throw new Handler.BadRequest(400, "Unknown status '" + v + "'");
        }
    }

    static OffsetDateTime time(Exchange ex, String name) {
        String v = text(ex, name);
        return v == null ? null : time(name, v);
    }

    static OffsetDateTime time(String name, String v) {
        try {
            return OffsetDateTime.parse(v);
        } catch (DateTimeParseException e) {
            throw new Handler.BadRequest(400, "'" + name + "' is not an ISO-8601 time with offset: '" + v + "'");
        }
    }

    static long integer(Exchange ex, String name, long fallback, long min, long max) {
        String v = text(ex, name);
        if (v == null) {
            return fallback;
        }
        try {
            long n = Long.parseLong(v);
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new Handler.BadRequest(400, "'" + name + "' must be a number from " + min + " to " + max + ", was '"
                + v + "'");
    }

    /**
     * {@code q} narrowed by the parameter's value, or a 400 naming the parameter (the query type names its own
     * field, which the caller did not send).
     */
    static <Q> Q valid(String name, Q q, String value, java.util.function.BiFunction<Q, String, Q> narrow) {
        try {
            return narrow.apply(q, value);
        } catch (dev.coop.failure.CoopValidationException e) {
            throw new Handler.BadRequest(400, "Parameter '" + name + "' is refused: " + e.getMessage());
        }
    }

    private static String required(Exchange ex, String name) {
        String v = text(ex, name);
        if (v == null) {
            throw new Handler.BadRequest(400, "Missing parameter '" + name + "'");
        }
        return v;
    }
}
