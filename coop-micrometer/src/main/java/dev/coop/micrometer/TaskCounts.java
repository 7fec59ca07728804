package dev.coop.micrometer;

import dev.coop.CoopClient;
import dev.coop.inspect.OpenTaskCount;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gauges of open external tasks by name: how many, and the age of the oldest. A daemon thread of its own reads
 * them from the database once per interval (one scan of the index of open tasks, whatever their number), so the gauges
 * move without a caller; names come and go with their tasks. {@link #close()} stops the thread.
 *
 * <p>A name's gauges are registered once and read its latest values from a map: re-registering them on every refresh
 * (Micrometer's {@code overwrite}) removes each gauge before adding it again, and a scrape in between would miss it.
 */
final class TaskCounts implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TaskCounts.class);

    private final CoopClient client;
    private final MultiGauge open;
    private final MultiGauge oldest;
    private final ScheduledExecutorService timer;
    /** The latest open count and oldest age (seconds) by task name, as the gauges read them. */
    private final Map<String, double[]> latest = new ConcurrentHashMap<>();

    TaskCounts(CoopClient client, Duration refresh, MultiGauge open, MultiGauge oldest) {
        this.client = Objects.requireNonNull(client, "client");
        requirePositive(refresh);
        this.open = open;
        this.oldest = oldest;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "coop-task-gauges");
            thread.setDaemon(true);
            return thread;
        });
        timer.scheduleWithFixedDelay(this::refresh, 0, refresh.toNanos(), TimeUnit.NANOSECONDS);
    }

    static Duration requirePositive(Duration refresh) {
        if (refresh == null || refresh.isNegative() || refresh.isZero()) {
            throw new IllegalArgumentException("refresh must be positive, was " + refresh);
        }
        return refresh;
    }

    /** Reads the counts; the gauges then show one row per name with open tasks. Never throws (the timer lives on). */
    private void refresh() {
        try {
            List<OpenTaskCount> counts = client.openTaskCounts();
            Instant at = client.now();
            for (OpenTaskCount c : counts) { // values first: a gauge registered below reads them at once
                latest.put(c.name(), new double[]{c.open(),
                        Math.max(0, Duration.between(c.oldest(), at).toMillis() / 1000.0)});
            }
            open.register(rows(counts, 0), false); // false: keep a name's gauge, drop the names gone
            oldest.register(rows(counts, 1), false);
            latest.keySet().retainAll(counts.stream().map(OpenTaskCount::name).toList());
        } catch (RuntimeException e) {
            log.warn("Could not count the open external tasks (the gauges keep their values; next try in one"
                    + " refresh interval): {}", e.toString());
        }
    }

    /** One row per name, whose gauge reads value {@code index} of the name's latest values (0 once it is gone). */
    private List<MultiGauge.Row<?>> rows(List<OpenTaskCount> counts, int index) {
        return counts.stream().<MultiGauge.Row<?>>map(c -> MultiGauge.Row.of(Tags.of("name", c.name()), c.name(),
                name -> {
                    double[] values = latest.get(name);
                    return values == null ? 0 : values[index];
                })).toList();
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
