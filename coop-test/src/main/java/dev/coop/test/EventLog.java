package dev.coop.test;

import dev.coop.Event;
import java.util.List;

/** Readable views of an event log, for assertions. */
public final class EventLog {
    private EventLog() {
    }

    /**
     * One line per event: {@code TYPE saga step}, with {@code -} for an empty column, e.g.
     * {@code "SUSPENDED root-handler 0"}.
     */
    public static List<String> rows(List<Event> events) {
        return events.stream().map(EventLog::row).toList();
    }

    /** One event as {@code TYPE saga step}. */
    public static String row(Event e) {
        return e.type() + " " + orDash(e.saga()) + " " + orDash(e.step());
    }

    private static String orDash(String s) {
        return s == null ? "-" : s;
    }
}
