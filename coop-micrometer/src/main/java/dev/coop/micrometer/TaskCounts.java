package dev.coop.micrometer;

import dev.coop.CoopClient;
import dev.coop.inspect.OpenTaskCount;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gauges of open external tasks by name: how many, and the age of the oldest. Refreshed from the database (a scan
 * of the index of open tasks) at most once per interval, when the registry is scraped.
 */
final class TaskCounts {
    private static final Logger log = LoggerFactory.getLogger(TaskCounts.class);

    private final CoopClient client;
    private final long refreshNanos;
    private final MultiGauge open;
    private final MultiGauge oldest;
    private long readAt;
    private boolean read;

    TaskCounts(CoopClient client, Duration refresh, MultiGauge open, MultiGauge oldest) {
        this.client = Objects.requireNonNull(client, "client");
        if (refresh == null || refresh.isNegative()) {
            throw new IllegalArgumentException("refresh must be zero or positive, was " + refresh);
        }
        this.refreshNanos = refresh.toNanos();
        this.open = open;
        this.oldest = oldest;
    }

    /** Reads the counts again when the interval passed; the gauges then show one row per name with open tasks. */
    synchronized void refresh() {
        long now = System.nanoTime();
        if (read && now - readAt < refreshNanos) {
            return;
        }
        read = true;
        readAt = now;
        List<OpenTaskCount> counts;
        try {
            counts = client.openTaskCounts();
        } catch (RuntimeException e) {
            log.warn("Could not count the open external tasks: {}", e.toString());
            return;
        }
        Instant at = client.now();
        open.register(counts.stream().map(c -> MultiGauge.Row.of(Tags.of("name", c.name()), c.open())).toList(),
                true);
        oldest.register(counts.stream().map(c -> MultiGauge.Row.of(Tags.of("name", c.name()),
                Math.max(0, Duration.between(c.oldest(), at).toMillis() / 1000.0))).toList(), true);
    }
}
