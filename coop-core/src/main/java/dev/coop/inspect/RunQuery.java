package dev.coop.inspect;

import dev.coop.RunStatus;

import dev.coop.failure.CoopValidationException;

import dev.coop.internal.store.InputLimits;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Objects;

/**
 * Which runs {@link dev.coop.CoopClient#runs(RunQuery)} lists: newest first, at most {@code limit}, optionally by
 * status, saga, topic, age and failure type; page on with {@link #before(OffsetDateTime)} set to the last
 * {@code createdAt} seen. The same filters, without the limit, select the runs that
 * {@link dev.coop.CoopClient#countRuns(RunQuery)} counts and that
 * {@link dev.coop.CoopClient#cancel(RunQuery, String, String)} and
 * {@link dev.coop.CoopClient#rollback(RunQuery, String, String)} act on. Immutable; each method returns a changed copy.
 * Saga, topic, failure type and business key are 1 to 255 characters without control characters (a tag: 1 to 100, as
 * launches take them); times lie between years 1 and 9999 and are kept in UTC. A value outside these is refused with a
 * {@link CoopValidationException} naming the parameter.
 */
public record RunQuery(RunStatus status, String saga, String topic, OffsetDateTime since, OffsetDateTime before,
        int limit, String businessKey, String tag, String failureType) {
    /** The largest page. */
    public static final int MAX_LIMIT = 1000;

    public RunQuery {
        if (limit < 1 || limit > MAX_LIMIT) {
            throw new CoopValidationException("limit must be between 1 and " + MAX_LIMIT + ", was " + limit);
        }
        saga = saga == null ? null : InputLimits.key("RunQuery.saga", saga);
        topic = topic == null ? null : InputLimits.key("RunQuery.topic", topic);
        since = since == null ? null : time("RunQuery.since", since);
        before = before == null ? null : time("RunQuery.before", before);
        failureType = failureType == null ? null : InputLimits.key("RunQuery.failureType", failureType);
        businessKey = businessKey == null ? null : InputLimits.key("RunQuery.businessKey", businessKey);
        tag = tag == null ? null : validTag(tag);
    }

    /** A tag as launches take it ({@link dev.coop.LaunchOptions#tags}): a key of at most 100 characters. */
    private static String validTag(String t) {
        InputLimits.key("RunQuery.tag", t);
        if (t.length() > dev.coop.LaunchOptions.MAX_TAG_LENGTH) {
            throw new CoopValidationException("RunQuery.tag must be at most " + dev.coop.LaunchOptions.MAX_TAG_LENGTH
                    + " characters (as launch tags), was " + t.length());
        }
        return t;
    }

    /** A query without a failure type. */
    public RunQuery(RunStatus status, String saga, String topic, OffsetDateTime since, OffsetDateTime before,
            int limit, String businessKey, String tag) {
        this(status, saga, topic, since, before, limit, businessKey, tag, null);
    }

    /**
     * A time PostgreSQL can compare with: within {@link InputLimits#EARLIEST} and {@link InputLimits#LATEST}, and in
     * UTC (java.time allows offsets up to 18 hours, PostgreSQL fewer; the instant is what counts).
     */
    private static OffsetDateTime time(String what, OffsetDateTime t) {
        Instant at;
        try {
            at = t.toInstant();
        } catch (DateTimeException e) {
            at = null;
        }
        if (at == null || at.isBefore(InputLimits.EARLIEST) || at.isAfter(InputLimits.LATEST)) {
            throw new CoopValidationException(what + " must be between " + InputLimits.EARLIEST + " and "
                    + InputLimits.LATEST + ", was " + t);
        }
        return t.withOffsetSameInstant(ZoneOffset.UTC);
    }

    /** A query without a business key or tag. */
    public RunQuery(RunStatus status, String saga, String topic, OffsetDateTime since, OffsetDateTime before,
            int limit) {
        this(status, saga, topic, since, before, limit, null, null, null);
    }

    /** The 50 newest runs. */
    public static RunQuery newest() {
        return new RunQuery(null, null, null, null, null, 50);
    }

    /**
     * Only the runs of messages launched with this business key ({@link dev.coop.LaunchOptions#businessKey}); an
     * index probe of the key.
     */
    public RunQuery businessKey(String key) {
        return new RunQuery(status, saga, topic, since, before, limit, Objects.requireNonNull(key, "businessKey"),
                tag, failureType);
    }

    /** Only the runs of messages launched with this tag ({@link dev.coop.LaunchOptions#tags}); an index probe. */
    public RunQuery tag(String t) {
        return new RunQuery(status, saga, topic, since, before, limit, businessKey, Objects.requireNonNull(t, "tag"),
                failureType);
    }

    public RunQuery status(RunStatus s) {
        return new RunQuery(Objects.requireNonNull(s, "status"), saga, topic, since, before, limit, businessKey, tag,
                failureType);
    }

    public RunQuery saga(String s) {
        return new RunQuery(status, Objects.requireNonNull(s, "saga"), topic, since, before, limit, businessKey, tag,
                failureType);
    }

    public RunQuery topic(String t) {
        return new RunQuery(status, saga, Objects.requireNonNull(t, "topic"), since, before, limit, businessKey, tag,
                failureType);
    }

    /** Only runs created at or after this instant. */
    public RunQuery since(OffsetDateTime t) {
        return new RunQuery(status, saga, topic, Objects.requireNonNull(t, "since"), before, limit, businessKey, tag,
                failureType);
    }

    /** Only runs created strictly before this instant (the next page). */
    public RunQuery before(OffsetDateTime t) {
        return new RunQuery(status, saga, topic, since, Objects.requireNonNull(t, "before"), limit, businessKey, tag,
                failureType);
    }

    public RunQuery limit(int n) {
        return new RunQuery(status, saga, topic, since, before, n, businessKey, tag, failureType);
    }

    /**
     * Only runs whose failure (why they rolled back, failed to, or are parked) is of this type: its fully qualified
     * class name ({@code java.io.IOException}) or its simple name ({@code IOException}).
     */
    public RunQuery failureType(String type) {
        return new RunQuery(status, saga, topic, since, before, limit, businessKey, tag,
                Objects.requireNonNull(type, "failureType"));
    }
}
