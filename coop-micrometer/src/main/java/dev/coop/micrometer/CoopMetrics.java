package dev.coop.micrometer;

import dev.coop.CoopClient;
import dev.coop.CooperationContext;
import dev.coop.EngineListener;
import dev.coop.RunStatus;
import dev.coop.StepContext;
import dev.coop.internal.store.LogNames;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Coop's metrics for Micrometer: register it as an engine's (and client's) listener. Tags are few and bounded (saga,
 * step, topic, outcome, status): never a run or message id.
 *
 * <ul>
 * <li>{@code coop.step} (timer; saga, step, part, outcome): every execution of user code and how long it ran
 * <li>{@code coop.claim.latency} (timer; saga): from when a run became runnable to its claim
 * <li>{@code coop.barrier.wait} (timer; saga): how long a run waited for the children of its previous step
 * <li>{@code coop.database.retries} (counter; saga): database trouble the engine retries
 * <li>{@code coop.notifications.reconnects} (counter): notification connections lost
 * <li>{@code coop.launches} (counter; topic): messages launched by clients and steps
 * <li>{@code coop.runs} (gauge; status RUNNABLE, WAITING, PARKED, HELD): with {@link #withRunGauges}
 * <li>{@code coop.tasks.open} (gauge; name) and {@code coop.tasks.oldest.age} (gauge, seconds; name): open external
 * tasks, with {@link #withTaskGauges} (read by a thread of its own: {@link #close()} stops it)
 * </ul>
 */
public final class CoopMetrics implements EngineListener, AutoCloseable {
    private static final String NONE = "none";

    private final MeterRegistry registry;
    private final Map<StepKey, Timer> steps = new ConcurrentHashMap<>();
    private final Map<String, Timer> claims = new ConcurrentHashMap<>();
    private final Map<String, Timer> barriers = new ConcurrentHashMap<>();
    private final Map<String, Counter> retries = new ConcurrentHashMap<>();
    private final Map<String, Counter> launches = new ConcurrentHashMap<>();
    private final Counter reconnects;
    private volatile TaskCounts taskCounts;

    private record StepKey(String saga, String step, Part part, Outcome outcome) {
    }

    public CoopMetrics(MeterRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.reconnects = Counter.builder("coop.notifications.reconnects")
                .description("Notification connections (LISTEN) lost and re-opened").register(registry);
    }

    /**
     * Adds the gauges {@code coop.runs} by status (RUNNABLE, WAITING, PARKED, HELD), read from {@code client} at most once
     * per {@code refresh} (a count over the index of unfinished runs), when the registry is scraped.
     */
    public CoopMetrics withRunGauges(CoopClient client, Duration refresh) {
        RunCounts counts = new RunCounts(client, refresh);
        for (RunStatus status : new RunStatus[]{RunStatus.RUNNABLE, RunStatus.WAITING, RunStatus.PARKED,
                RunStatus.HELD}) {
            Gauge.builder("coop.runs", counts, c -> c.count(status)).tag("status", status.name())
                    .description("Unfinished runs by status").strongReference(true) // nothing else holds counts
                    .register(registry);
        }
        return this;
    }

    /**
     * Adds the gauges of open external tasks by name: {@code coop.tasks.open} (how many) and
     * {@code coop.tasks.oldest.age} (seconds since the oldest was opened). A daemon thread reads them from
     * {@code client} once per {@code refresh} (one scan of the index of open tasks, whatever their number), so they
     * move by themselves; names come and go with their tasks. {@link #close()} stops that thread.
     *
     * @throws IllegalArgumentException if {@code refresh} is not positive, or the gauges were added already
     */
    public synchronized CoopMetrics withTaskGauges(CoopClient client, Duration refresh) {
        if (taskCounts != null) {
            throw new IllegalArgumentException("withTaskGauges was already called on these metrics");
        }
        TaskCounts.requirePositive(refresh);
        taskCounts = new TaskCounts(client, refresh,
                MultiGauge.builder("coop.tasks.open").description("Open external tasks by name").register(registry),
                MultiGauge.builder("coop.tasks.oldest.age").baseUnit("seconds")
                        .description("Age of the oldest open external task by name").register(registry));
        return this;
    }

    /** Stops reading the open external tasks ({@link #withTaskGauges}); the other metrics keep recording. */
    @Override
    public synchronized void close() {
        if (taskCounts != null) {
            taskCounts.close();
        }
    }

    @Override
    public Object stepStarted(StepContext<?> step, Part part) {
        return null;
    }

    @Override
    public void stepEnded(StepContext<?> step, Part part, Object state, Outcome outcome, long nanos,
            Throwable failure) {
        StepKey key = new StepKey(step.saga(), stepName(step.step(), part), part, outcome);
        Timer timer = steps.get(key);
        if (timer == null) {
            timer = steps.computeIfAbsent(key, k -> Timer.builder("coop.step")
                    .description("Executions of step code (steps, compensations, finally parts) and their duration")
                    .tag("saga", k.saga()).tag("step", k.step()).tag("part", k.part().name().toLowerCase())
                    .tag("outcome", k.outcome().name().toLowerCase()).register(registry));
        }
        timer.record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void claimed(String saga, Duration waited) {
        timer(claims, "coop.claim.latency", "From runnable to claimed", saga).record(waited);
    }

    @Override
    public void barrierPassed(String saga, Duration waited) {
        timer(barriers, "coop.barrier.wait", "Time a run waited for its children", saga).record(waited);
    }

    @Override
    public void databaseRetry(String saga, Throwable cause) {
        String tag = saga == null ? NONE : saga;
        Counter counter = retries.get(tag);
        if (counter == null) {
            counter = retries.computeIfAbsent(tag, s -> Counter.builder("coop.database.retries")
                    .description("Database trouble the engine retries later").tag("saga", s).register(registry));
        }
        counter.increment();
    }

    @Override
    public void notificationsLost(Throwable cause) {
        reconnects.increment();
    }

    @Override
    public CooperationContext launching(String topic, CooperationContext context) {
        Counter counter = launches.get(topic);
        if (counter == null) {
            counter = launches.computeIfAbsent(topic, t -> Counter.builder("coop.launches")
                    .description("Messages launched").tag("topic", t).register(registry));
        }
        counter.increment();
        return context;
    }

    private Timer timer(Map<String, Timer> cache, String name, String description, String saga) {
        Timer timer = cache.get(saga);
        if (timer == null) {
            timer = cache.computeIfAbsent(saga,
                    s -> Timer.builder(name).description(description).tag("saga", s).register(registry));
        }
        return timer;
    }

    /** A compensation runs as "Rollback of <step>": it is tagged with the step's own name (and its part). */
    private static String stepName(String name, Part part) {
        return part == Part.COMPENSATION && name.startsWith(LogNames.ROLLBACK_PREFIX)
                ? name.substring(LogNames.ROLLBACK_PREFIX.length())
                : name;
    }
}
