package dev.coop.micrometer;

import dev.coop.CoopClient;
import dev.coop.RunStatus;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The unfinished runs by status, counted at most once per refresh interval, when a gauge is read. */
final class RunCounts {
    private static final Logger log = LoggerFactory.getLogger(RunCounts.class);

    private final CoopClient client;
    private final long refreshNanos;
    private Map<RunStatus, Long> counts = Map.of();
    private long readAt;
    private boolean read;

    RunCounts(CoopClient client, Duration refresh) {
        this.client = Objects.requireNonNull(client, "client");
        if (refresh == null || refresh.isNegative()) {
            throw new IllegalArgumentException("refresh must be zero or positive, was " + refresh);
        }
        this.refreshNanos = refresh.toNanos();
    }

    synchronized double count(RunStatus status) {
        long now = System.nanoTime();
        if (!read || now - readAt >= refreshNanos) {
            read = true;
            readAt = now;
            try {
                counts = client.unfinishedRuns();
            } catch (RuntimeException e) {
                log.warn("Could not count the unfinished runs: {}", e.toString());
                return Double.NaN;
            }
        }
        Long n = counts.get(status);
        return n == null ? Double.NaN : n;
    }
}
