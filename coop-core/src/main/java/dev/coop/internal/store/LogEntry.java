package dev.coop.internal.store;

import dev.coop.inspect.EventType;

/**
 * An event a run appends to the log at the end of a transaction.
 *
 * @param context the cooperation context to record with it (when the step changed it), or null
 */
public record LogEntry(EventType type, String step, String exception, String context) {
    public LogEntry(EventType type, String step, String exception) {
        this(type, step, exception, null);
    }

    public static LogEntry of(EventType type, String step) {
        return new LogEntry(type, step, null, null);
    }
}
