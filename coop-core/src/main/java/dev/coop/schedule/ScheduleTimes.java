package dev.coop.schedule;

import com.cronutils.model.Cron;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinition;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Due times of schedules, computed from instants read from the engine's time (the database's clock unless a time source is given; never the JVM's clock). Cron expressions
 * are parsed and evaluated by cron-utils: 5 fields are read as Unix cron (minute resolution), 6 fields, or a
 * {@code @daily}-style nickname, as Spring 5.3 cron (a leading seconds field; {@code ?}, {@code L}, {@code W} and
 * {@code #} supported). Both number days of the week 0-7 with Sunday as 0 and 7.
 */
final class ScheduleTimes {
    private static final CronDefinition UNIX = CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX);
    private static final CronDefinition WITH_SECONDS = CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING53);
    /**
     * Parsed expressions. cron-utils' execution times are immutable once built (final fields; computing a time
     * allocates), so they are shared; parsers are not cached. Parsing costs up to milliseconds in code that runs once
     * per period and so stays cold, which would make every cron period fire that much late.
     */
    private static final Map<String, ExecutionTime> PARSED = new ConcurrentHashMap<>();
    private static final int MAX_CACHED = 10_000;

    private ScheduleTimes() {
    }

    /**
     * Parses a cron expression.
     *
     * @throws IllegalArgumentException with cron-utils' reason when it is not one
     */
    static ExecutionTime parse(String expression) {
        ExecutionTime cached = PARSED.get(expression);
        if (cached != null) {
            return cached;
        }
        String text = expression.strip();
        int fields = text.isEmpty() ? 0 : text.split("\\s+").length;
        CronDefinition definition;
        if (fields == 5) {
            definition = UNIX;
        } else if (fields == 6 || (fields == 1 && text.startsWith("@"))) {
            definition = WITH_SECONDS;
        } else {
            throw new IllegalArgumentException("expected 5 fields (minute hour day-of-month month day-of-week) or 6"
                    + " (a seconds field first), found " + fields);
        }
        Cron cron = new CronParser(definition).parse(text);
        cron.validate();
        ExecutionTime parsed = ExecutionTime.forCron(cron);
        if (PARSED.size() < MAX_CACHED) {
            PARSED.put(expression, parsed);
        }
        return parsed;
    }

    /** The first due time of a schedule created (or resumed) at {@code now}; null when a cron has no time left. */
    static Instant first(Schedule schedule, Instant now) {
        if (schedule.period() != null) {
            return now.plus(schedule.period());
        }
        return nextCron(schedule, now);
    }

    /**
     * The due time after a period due at {@code due} was handled at {@code now} (fired or skipped). Periods missed
     * meanwhile are not made up: the result is always after {@code now}. A fixed period keeps its rhythm (due +
     * k periods); a cron takes its next time after {@code now}. Null when a cron has no time left.
     */
    static Instant next(Schedule schedule, Instant due, Instant now) {
        Duration period = schedule.period();
        if (period != null) {
            long periodMicros = period.toNanos() / 1_000;
            long behindMicros = Math.max(0, ChronoUnit.MICROS.between(due, now));
            return due.plus(periodMicros * (behindMicros / periodMicros + 1), ChronoUnit.MICROS);
        }
        return nextCron(schedule, now.isBefore(due) ? due : now);
    }

    /** Whether periods between {@code due} and {@code now}, after the one due at {@code due}, were missed. */
    static boolean missedSome(Schedule schedule, Instant due, Instant now) {
        Duration period = schedule.period();
        if (period != null) {
            return !due.plus(period).isAfter(now);
        }
        Instant after = nextCron(schedule, due);
        return after != null && !after.isAfter(now);
    }

    private static Instant nextCron(Schedule schedule, Instant after) {
        ZoneId zone = schedule.zone();
        // cron-utils keeps the fraction of a second of its reference time; cron times are whole seconds
        ZonedDateTime from = after.truncatedTo(ChronoUnit.SECONDS).atZone(zone);
        ExecutionTime times = parse(schedule.cron());
        ZonedDateTime next = times.nextExecution(from).orElse(null);
        for (int i = 0; next != null && !next.toInstant().isAfter(after) && i < 3; i++) {
            next = times.nextExecution(next).orElse(null); // defensive: strictly after
        }
        return next == null || !next.toInstant().isAfter(after) ? null : next.toInstant();
    }
}
