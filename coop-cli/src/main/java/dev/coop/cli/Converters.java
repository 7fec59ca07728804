package dev.coop.cli;

import dev.coop.RunStatus;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** The values of {@code coop}'s options that picocli does not convert by itself: run statuses, ages and times. */
final class Converters {
    private Converters() {
    }

    static final class StatusConverter implements ITypeConverter<RunStatus> {
        @Override
        public RunStatus convert(String value) {
            try {
                return RunStatus.valueOf(value.strip().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException("'" + value + "' is not a run status (one of "
                        + Arrays.toString(RunStatus.values()) + ")");
            }
        }
    }

    /** An age: a number of seconds, minutes, hours or days ({@code 30s}, {@code 15m}, {@code 2h}, {@code 30d}). */
    static final class AgeConverter implements ITypeConverter<Duration> {
        private static final Pattern AGE = Pattern.compile("(\\d{1,9})\\s*(s|m|h|d)");

        /** The age {@code value} names, or null when it is not one. */
        static Duration parse(String value) {
            Matcher m = AGE.matcher(value.strip().toLowerCase(Locale.ROOT));
            if (!m.matches()) {
                return null;
            }
            long n = Long.parseLong(m.group(1));
            return switch (m.group(2)) {
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            };
        }

        @Override
        public Duration convert(String value) {
            Duration age = parse(value);
            if (age == null) {
                throw new TypeConversionException("'" + value + "' is not an age: a number (at most 9 digits) and"
                        + " s, m, h or d, e.g. 30d");
            }
            return age;
        }
    }

    /** An age ({@code 15m}), a date, or an ISO-8601 time with offset (or {@code Z}). */
    static final class TimeConverter implements ITypeConverter<OffsetDateTime> {
        @Override
        public OffsetDateTime convert(String value) {
            Duration age = AgeConverter.parse(value);
            if (age != null) {
                return OffsetDateTime.now(ZoneOffset.UTC).minus(age);
            }
            try {
                return OffsetDateTime.parse(value.strip());
            } catch (DateTimeParseException notOffset) {
                try {
                    return Instant.parse(value.strip()).atOffset(ZoneOffset.UTC);
                } catch (DateTimeParseException notInstant) {
                    try {
                        return LocalDate.parse(value.strip()).atStartOfDay().atOffset(ZoneOffset.UTC);
                    } catch (DateTimeParseException notDate) {
                        throw new TypeConversionException("'" + value + "' is neither an age (30s, 15m, 2h, 7d),"
                                + " a date (2026-05-01) nor an ISO-8601 time (2026-05-01T08:00:00Z)");
                    }
                }
            }
        }
    }
}
