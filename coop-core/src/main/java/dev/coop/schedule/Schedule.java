package dev.coop.schedule;

import dev.coop.failure.CoopValidationException;

import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.Objects;

/**
 * When a schedule launches its message: every fixed period, or at the times of a cron expression. Immutable; pass it
 * to {@link dev.coop.CoopClient#schedule(String, dev.coop.Topic, Object, Schedule)}.
 *
 * <pre>{@code
 * Schedule.every(Duration.ofMinutes(15))                          // 15 min after scheduling, then every 15 min
 * Schedule.cron("0 9 * * MON-FRI").inZone(ZoneId.of("Europe/Paris")) // 09:00 Paris time on weekdays
 * Schedule.cron("0/10 * * * * *")                                   // every 10 seconds (6 fields: seconds first)
 * }</pre>
 *
 * <p>
 * By default a period does not start while the message of the previous period still has unfinished runs: that period
 * is skipped ({@link #allowingOverlap()} turns this off). Periods missed while no engine ran are not made up: the
 * schedule fires once, late, then keeps its times.
 */
public final class Schedule {
    /** The shortest fixed period. */
    public static final Duration MIN_PERIOD = Duration.ofSeconds(1);
    /** The longest fixed period. */
    public static final Duration MAX_PERIOD = Duration.ofDays(3660);
    private static final ZoneId UTC = ZoneId.of("UTC");

    private final Duration period;
    private final String cron;
    private final ZoneId zone;
    private final boolean overlap;
    private final boolean paused;

    private Schedule(Duration period, String cron, ZoneId zone, boolean overlap, boolean paused) {
        this.period = period;
        this.cron = cron;
        this.zone = zone;
        this.overlap = overlap;
        this.paused = paused;
    }

    /**
     * A fixed rate: the first period is due {@code period} after the schedule is created (or changed, or resumed),
     * the next ones every {@code period} after that, whatever the runs take.
     *
     * @param period at least {@link #MIN_PERIOD}, at most {@link #MAX_PERIOD}, in whole milliseconds
     */
    public static Schedule every(Duration period) {
        if (period == null) {
            throw new CoopValidationException("The period of a schedule is missing (null)");
        }
        if (period.compareTo(MIN_PERIOD) < 0 || period.compareTo(MAX_PERIOD) > 0) {
            throw new CoopValidationException("The period of a schedule must be between 1 second and 3660 days, was "
                    + period);
        }
        if (period.getNano() % 1_000_000 != 0) {
            throw new CoopValidationException("The period of a schedule must be whole milliseconds, was " + period);
        }
        return new Schedule(period, null, null, false, false);
    }

    /**
     * The times of a cron expression, read in UTC unless {@link #inZone(ZoneId)} says otherwise. Five fields are Unix
     * cron ({@code minute hour day-of-month month day-of-week}, e.g. {@code "0 9 * * MON-FRI"}); six fields put a
     * seconds field first (Spring's cron, e.g. {@code "0/5 * * * * *"}, with {@code ?}, {@code L}, {@code W} and
     * {@code #}); {@code @yearly}, {@code @monthly}, {@code @weekly}, {@code @daily} and {@code @hourly} work too. Days
     * of the week are {@code 0}-{@code 7} (Sunday is 0 and 7) or {@code MON}-{@code SUN}. Parsed by cron-utils.
     *
     * <p>
     * Daylight saving time: a local time that does not exist on the day clocks go forward (e.g. 02:30) does not fire
     * that day; a local time that happens twice on the day clocks go back fires once, the first time. Expressions
     * with every hour or finer fire each real hour (e.g. {@code "0 * * * *"} fires at both 01:00 when clocks go back).
     *
     * @throws CoopValidationException naming the problem when {@code expression} is not a cron expression
     */
    public static Schedule cron(String expression) {
        if (expression == null || expression.isBlank()) {
            throw new CoopValidationException("The cron expression of a schedule is missing");
        }
        if (expression.length() > 1_000 || expression.chars().anyMatch(c -> c < 0x20 && c != '\t' && c != '\n')) {
            throw new CoopValidationException("Invalid cron expression: at most 1000 characters and no control"
                    + " characters such as NUL (" + expression.length() + " characters given)");
        }
        String text = expression.strip().replaceAll("\\s+", " ");
        try {
            ScheduleTimes.parse(text);
        } catch (IllegalArgumentException e) {
            throw new CoopValidationException("Invalid cron expression '" + expression + "': " + e.getMessage(), e);
        }
        return new Schedule(null, text, UTC, false, false);
    }

    /** The time zone a cron expression is read in (default UTC). A fixed period has none. */
    public Schedule inZone(ZoneId zone) {
        if (zone == null) {
            throw new CoopValidationException("The time zone of a schedule is missing (null)");
        }
        if (cron == null) {
            throw new CoopValidationException(
                    "A fixed period does not depend on a time zone; inZone applies to cron schedules");
        }
        return new Schedule(null, cron, zone, overlap, paused);
    }

    /** The time zone given by its id, e.g. {@code "Europe/Paris"}. */
    public Schedule inZone(String zoneId) {
        try {
            return inZone(ZoneId.of(Objects.requireNonNullElse(zoneId, "")));
        } catch (DateTimeException e) {
            throw new CoopValidationException("Unknown time zone '" + zoneId + "': " + e.getMessage(), e);
        }
    }

    /** Fires every period even while the messages of earlier periods still have unfinished runs. */
    public Schedule allowingOverlap() {
        return new Schedule(period, cron, zone, true, paused);
    }

    /**
     * The same times, paused: nothing fires until the schedule is replaced by one that is not paused (its next time
     * is then computed from that moment).
     */
    public Schedule paused() {
        return new Schedule(period, cron, zone, overlap, true);
    }

    /** The fixed period, or null for a cron schedule. */
    public Duration period() {
        return period;
    }

    /** The cron expression (whitespace normalized), or null for a fixed period. */
    public String cron() {
        return cron;
    }

    /** The time zone of a cron schedule, or null for a fixed period. */
    public ZoneId zone() {
        return zone;
    }

    /** Whether periods may start while earlier ones still run. */
    public boolean allowsOverlap() {
        return overlap;
    }

    public boolean isPaused() {
        return paused;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Schedule s && Objects.equals(s.period, period) && Objects.equals(s.cron, cron)
                && Objects.equals(s.zone, zone) && s.overlap == overlap && s.paused == paused;
    }

    @Override
    public int hashCode() {
        return Objects.hash(period, cron, zone, overlap, paused);
    }

    /** For example {@code "every PT15M"} or {@code "cron '0 9 * * MON-FRI' in Europe/Paris, allowing overlap"}. */
    @Override
    public String toString() {
        return (period != null ? "every " + period : "cron '" + cron + "' in " + zone)
                + (overlap ? ", allowing overlap" : "") + (paused ? ", paused" : "");
    }

    /** The first due time of this schedule when it is created (or resumed) at {@code now}; null when a cron has no time left. */
    public Instant firstTime(Instant now) {
        return ScheduleTimes.first(this, now);
    }

    /**
     * The due time after a period due at {@code due} was handled at {@code now} (fired or skipped). Missed periods are
     * not made up: the result is after {@code now}. Null when a cron has no time left.
     */
    public Instant nextTime(Instant due, Instant now) {
        return ScheduleTimes.next(this, due, now);
    }

    /** Whether periods after the one due at {@code due} and before {@code now} were missed. */
    public boolean missedSome(Instant due, Instant now) {
        return ScheduleTimes.missedSome(this, due, now);
    }
}
