package dev.coop.dashboard;

/** What a dashboard user may do. */
public enum Role {
    /** Reads everything: runs, hierarchies, events, schedules, joins, the audit. */
    VIEWER,
    /** Reads, and acts: cancel, roll back, retry a parked run, mark a parked step done. */
    OPERATOR;

    /** The role named {@code text} ({@code viewer}, {@code operator}; any case). */
    public static Role parse(String text) {
        for (Role r : values()) {
            if (r.name().equalsIgnoreCase(text == null ? "" : text.strip())) {
                return r;
            }
        }
        throw new IllegalArgumentException("Unknown dashboard role '" + text + "': use viewer or operator");
    }
}
