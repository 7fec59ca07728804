package dev.coop.bench;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Checks what Coop made durable after a run; any difference fails the benchmark loudly. */
final class Verify {
    private Verify() {
    }

    static void noFailures(String what, List<String> failures) {
        if (!failures.isEmpty()) {
            throw new IllegalStateException(what + ": " + failures.size() + " hierarchies did not commit, e.g. "
                    + failures.subList(0, Math.min(5, failures.size())));
        }
    }

    /** Every run of the saga committed and there are exactly {@code expected} of them. */
    static void runsCommitted(BenchDb db, String saga, long expected) {
        Map<String, Long> byStatus = db.counts("SELECT status, count(*) FROM coop.run WHERE saga = ? GROUP BY status",
                saga);
        if (!byStatus.equals(expected == 0 ? Map.of() : Map.of("COMMITTED", expected))) {
            throw new IllegalStateException("Runs of saga " + saga + ": expected " + expected
                    + " COMMITTED, found " + byStatus);
        }
    }

    static void messages(BenchDb db, String topic, long expected) {
        long n = db.longValue("SELECT count(*) FROM coop.message WHERE topic = ?", topic);
        if (n != expected) {
            throw new IllegalStateException("Messages on topic " + topic + ": expected " + expected + ", found " + n);
        }
    }

    /** The events written since {@code afterEventId}, by type. */
    static void events(BenchDb db, long afterEventId, Map<String, Long> expected) {
        Map<String, Long> actual = new TreeMap<>(
                db.counts("SELECT type, count(*) FROM coop.event WHERE id > ? GROUP BY type", afterEventId));
        if (!actual.equals(new TreeMap<>(expected))) {
            throw new IllegalStateException("Events written: expected " + new TreeMap<>(expected) + ", found "
                    + actual);
        }
    }

    /** No run anywhere in the schema is unfinished or failed, apart from history loaded on purpose. */
    static void nothingPending(BenchDb db) {
        Map<String, Long> byStatus = db.counts(
                "SELECT status, count(*) FROM coop.run WHERE status <> 'COMMITTED' GROUP BY status");
        if (!byStatus.isEmpty()) {
            throw new IllegalStateException("Runs not committed: " + byStatus);
        }
    }

    static long maxEventId(BenchDb db) {
        return db.longValue("SELECT coalesce(max(id), 0) FROM coop.event");
    }

    static Map<String, Long> eventCounts(long emitted, long seen, long suspended, long committed) {
        return Map.of("EMITTED", emitted, "SEEN", seen, "SUSPENDED", suspended, "COMMITTED", committed);
    }
}
