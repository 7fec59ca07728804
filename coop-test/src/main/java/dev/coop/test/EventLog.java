package dev.coop.test;

import dev.coop.inspect.Event;
import java.util.List;
import java.util.UUID;
import java.util.stream.Collectors;

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

    /**
     * The log as a table, one event a line, for failure messages: {@code #id TYPE saga step engine lineage}, with
     * every UUID cut to its last four characters, e.g.
     * {@code #3 SUSPENDED root-handler 0 coop-1a2b3c4d {56b9,5310}}.
     */
    public static String table(List<Event> events) {
        return events.stream()
                .map(e -> "#" + e.id() + " " + row(e) + " " + orDash(e.engine()) + " "
                        + shortLineage(e.lineage().ids()) + " msg " + shortId(e.messageId().value())
                        + (e.exception() == null ? "" : " exception " + e.exception()))
                .collect(Collectors.joining("\n"));
    }

    /** A lineage with every id cut to its last four characters, e.g. {@code {56b9,5310,6817}}. */
    public static String shortLineage(List<UUID> lineage) {
        return lineage.stream().map(EventLog::shortId).collect(Collectors.joining(",", "{", "}"));
    }

    private static String shortId(UUID id) {
        String s = id.toString();
        return s.substring(s.length() - 4);
    }

    private static String orDash(String s) {
        return s == null ? "-" : s;
    }
}
