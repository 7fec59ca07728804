package dev.coop.render;

import dev.coop.RunStatus;
import dev.coop.failure.Failure;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;

/** How the renderers write values: times, durations, type names, saga names, outcomes, stack frames. */
final class TextFormat {
    private TextFormat() {
    }

    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS 'UTC'",
            Locale.ROOT);

    /** A saga's name, with its version when it has versions ({@code billing v2}); version 1 is the name alone. */
    static String sagaName(String saga, int version) {
        return version == 1 ? saga : saga + " v" + version;
    }

    /**
     * When a run started: its first step's transaction, or (if the log does not say) when the run row says it
     * started, or was created.
     */
    static OffsetDateTime runStart(RunView run) {
        OffsetDateTime start = run.startedAt() != null ? run.startedAt() : run.createdAt();
        for (StepView s : run.steps()) {
            if (s.startedAt() != null && (start == null || s.startedAt().isBefore(start))) {
                start = s.startedAt();
            }
        }
        return start;
    }

    /** The overall state of a hierarchy's root runs, as its outcome would read. */
    static String outcome(List<RunView> runs, boolean finished) {
        if (runs.isEmpty()) {
            return "UNHANDLED";
        }
        if (!finished) {
            return "RUNNING";
        }
        if (runs.stream().anyMatch(r -> r.status() == RunStatus.ROLLBACK_FAILED)) {
            return "ROLLBACK_FAILED";
        }
        return runs.stream().anyMatch(r -> r.status() == RunStatus.ROLLED_BACK) ? "ROLLED_BACK" : "COMMITTED";
    }

    /** The last part of a dotted (class) name; other type names unchanged. */
    static String shortType(String type) {
        int dot = type.lastIndexOf('.');
        return dot < 0 || dot == type.length() - 1 ? type : type.substring(dot + 1);
    }

    static String firstLine(String message) {
        int nl = message.indexOf('\n');
        return nl < 0 ? message : message.substring(0, nl).stripTrailing() + " ...";
    }

    static String orDash(String s) {
        return s == null ? "-" : s;
    }

    static String strip(String name, String prefix, String suffix) {
        String s = name;
        if (!prefix.isEmpty() && s.startsWith(prefix)) {
            s = s.substring(prefix.length());
        }
        if (!suffix.isEmpty() && s.endsWith(suffix)) {
            s = s.substring(0, s.length() - suffix.length());
        }
        return s;
    }

    static String frame(Failure.Frame f) {
        StringBuilder s = new StringBuilder();
        if (f.className() != null) {
            s.append(f.className()).append('.');
        }
        s.append(f.functionName() == null ? "?" : f.functionName()).append('(')
                .append(f.fileName() == null ? "?" : f.fileName());
        if (f.lineNumber() != null && f.lineNumber() >= 0) {
            s.append(':').append(f.lineNumber());
        }
        return s.append(')').toString();
    }

    static String time(OffsetDateTime t) {
        return t == null ? "?" : TIME.format(t.withOffsetSameInstant(ZoneOffset.UTC));
    }

    /** {@code 12 ms}, {@code 1.25 s}, {@code 2 m 03 s}, {@code 1 h 05 m}; null when a bound is missing. */
    static String duration(OffsetDateTime from, OffsetDateTime to) {
        if (from == null || to == null) {
            return null;
        }
        return duration(Duration.between(from, to));
    }

    static String duration(Duration d) {
        long ms = Math.max(0, d.toMillis());
        if (ms < 1_000) {
            return ms + " ms";
        }
        if (ms < 60_000) {
            return String.format(Locale.ROOT, "%.2f s", ms / 1000.0);
        }
        long s = ms / 1000;
        if (s < 3600) {
            return String.format(Locale.ROOT, "%d m %02d s", s / 60, s % 60);
        }
        return String.format(Locale.ROOT, "%d h %02d m", s / 3600, (s % 3600) / 60);
    }
}
