package dev.coop.internal;

import dev.coop.EventType;

/** An event a run appends to the log at the end of a transaction. */
public record LogEntry(EventType type, String step, String exception) {
    public static LogEntry of(EventType type, String step) {
        return new LogEntry(type, step, null);
    }
}
