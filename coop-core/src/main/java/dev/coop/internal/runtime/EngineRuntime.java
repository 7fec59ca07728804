package dev.coop.internal.runtime;

import dev.coop.internal.Completions;
import dev.coop.internal.EngineSagas;
import dev.coop.internal.Listeners;
import dev.coop.internal.guard.NetworkTimeouts;
import dev.coop.internal.join.JoinBook;
import dev.coop.internal.join.JoinTimer;
import dev.coop.internal.store.SagaLimits;
import dev.coop.internal.retention.Pruner;
import dev.coop.internal.schedule.ScheduleTimer;
import dev.coop.internal.step.Dispatcher;
import dev.coop.internal.step.EngineContext;
import dev.coop.internal.step.Worker;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Time;
import dev.coop.internal.store.Tx;

import dev.coop.CooperationStrategy;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The threads of a started engine: workers, the notification listener, their shared dispatcher, and the schedule
 * timer.
 */
public final class EngineRuntime {
    private static final Logger log = LoggerFactory.getLogger(EngineRuntime.class);

    private final EngineContext context;
    private final Topology topology;
    /** The worker threads and their workers, in the same order; replacements join them while the engine runs. */
    private final List<Thread> workers = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final List<Worker> workerTasks = new java.util.concurrent.CopyOnWriteArrayList<>();
    private Thread listenerThread;
    private final ScheduleTimer timer;
    private Thread timerThread;
    private JoinTimer joinTimer;
    private Thread joinTimerThread;
    private Pruner pruner;
    private Thread prunerThread;
    private Thread watchThread;

    /** Everything an engine needs to run; validated by the public builder. */
    public record Config(String engineId, String name, DataSource dataSource, SchemaName schema, Json json,
            EngineSagas sagas, int workers, Duration pollInterval, boolean notifications,
            dev.coop.CooperationStrategy strategy, boolean schedules, boolean requireHandlers,
            Duration retention, Time time, Listeners listeners, Duration databaseTimeout,
            Duration idleInTransactionTimeout, int maxRunsPerTransaction) {
    }

    private final Config config;
    private volatile Runnable unsubscribeJumps = () -> {
    };

    public EngineRuntime(Config config) {
        this.config = config;
        Dispatcher dispatcher = new Dispatcher(List.copyOf(config.sagas().names()),
                config.pollInterval().toNanos());
        config.sagas().names().forEach(name -> dispatcher.limit(name, config.sagas().newest(name).workers()));
        config.sagas().names().forEach(name -> dispatcher.rounds(name,
                config.sagas().anyTransactionPerStep(name) ? 1 : config.maxRunsPerTransaction()));
        this.context = new EngineContext(config.engineId(), config.dataSource(),
                new Store(config.schema(), config.requireHandlers(), config.time(), config.sagas().keys(),
                        config.idleInTransactionTimeout()),
                config.json(), config.sagas(), dispatcher, new Completions(), config.strategy(),
                config.listeners(), new SagaLimits(config.schema()), (int) config.databaseTimeout().toMillis());
        this.topology = new Topology(config.schema());
        this.timer = config.schedules()
                ? new ScheduleTimer(bounded(), context.store(), config.engineId(),
                        config.pollInterval().toNanos(), context.dispatcher()::wake)
                : null;
    }

    /** Registers the sagas in the topology, then starts the listener and the workers. */
    /** Whether this engine listens for notifications (its configuration, settled when it was built). */
    public boolean listens() {
        return config.notifications();
    }

    /** How often this engine polls (its configuration, settled when it was built). */
    public java.time.Duration pollInterval() {
        return config.pollInterval();
    }

    public void start() {
        register();
        // created before the listener starts, so that its nudges always reach the timer
        joinTimer = new JoinTimer(config.engineId(), bounded(), config.schema(),
                new JoinBook(context.store(), config.json()), config.pollInterval().toNanos(),
                context.dispatcher()::wake);
        startThreads();
        // a time source that jumps (a test clock) must not leave timers armed with the old time
        unsubscribeJumps = config.time().onJump(this::timeJumped);
        log.info("Engine {} started: {} workers, sagas {}, notifications {}, schedules {}, poll every {} ms",
                config.engineId(),
                config.workers(), config.sagas().keys(), config.notifications() ? "on" : "off",
                config.schedules() ? "on" : "off", config.pollInterval().toMillis());
    }

    /** Registers the engine's saga versions, their limits, and the engine itself, in one transaction. */
    private void register() {
        Tx.run(config.dataSource(), "register the sagas of engine " + config.engineId(), c -> {
            topology.register(c, config.engineId(), config.sagas().all());
            for (String name : config.sagas().names()) { // the last engine to register a saga decides its limits
                context.limits().register(c, config.sagas().newest(name));
            }
            context.store().limited(context.limits().limited(c, config.sagas().names()));
            topology.engineStarted(c, config.engineId(), config.name(), host(), List.copyOf(config.sagas().names()),
                    config.sagas().keys());
            return null;
        });
    }

    /** Starts the listener, the schedule timer, the workers, the join timer, the connection watch and retention. */
    private void startThreads() {
        if (config.notifications()) {
            listenerThread = thread(new Listener(config.dataSource(), config.schema(), context.dispatcher(),
                    config.engineId(), this::wake, config.time().controlled(), config.listeners(),
                    (int) config.databaseTimeout().toMillis(), config.pollInterval().toMillis()), "listener");
        }
        if (timer != null) {
            timerThread = thread(timer, "schedules");
        }
        context.dispatcher().replacements(new WorkerReplacements(context, config.workers(), workers, workerTasks,
                this::thread));
        for (int i = 0; i < config.workers(); i++) {
            Worker task = new Worker(context);
            workerTasks.add(task);
            workers.add(thread(task, "worker-" + i));
        }
        joinTimerThread = thread(joinTimer, "join-timer");
        watchThread = thread(new ConnectionWatch(config.engineId(), List.copyOf(workerTasks), context.dispatcher(),
                config.listeners(), config.pollInterval().toNanos(),
                config.workers() + (config.notifications() ? 1 : 0) + 1), "connection-watch");
        if (config.retention() != null) {
            pruner = new Pruner(bounded(), config.schema(), config.time(), config.engineId(),
                    config.retention(),
                    Pruner.interval(config.retention(), config.pollInterval()));
            prunerThread = thread(pruner, "retention");
        }
    }

    /** The engine's DataSource, its connections bounded by the database timeout while the engine's threads use them. */
    private DataSource bounded() {
        return NetworkTimeouts.bounding(config.dataSource(), (int) config.databaseTimeout().toMillis());
    }

    private Thread thread(Runnable body, String role) {
        Thread t = Thread.ofPlatform().daemon(true).name("coop-" + config.engineId() + "-" + role)
                .unstarted(body);
        t.start();
        return t;
    }

    /**
     * Wakes this engine's workers for a saga (ignored when the engine does not run it), or its schedule timer for
     * {@link #SCHEDULES_CHANGED}.
     */
    public void wake(String saga) {
        if (ScheduleTimer.NOTIFICATION.equals(saga)) {
            if (timer != null) {
                timer.nudge();
            }
        } else if (JoinTimer.NOTIFICATION.equals(saga)) {
            if (joinTimer != null) {
                joinTimer.nudge();
            }
        } else {
            context.dispatcher().wake(saga);
        }
    }

    /**
     * Wakes this engine's workers for {@code runs} runs of a saga that this JVM made due (a launch by the engine's
     * client, committed): that many claims, no search; 0 when the number is not known, as {@link #wake(String)}.
     */
    public void wake(String saga, int runs) {
        if (runs > 0 && !ScheduleTimer.NOTIFICATION.equals(saga) && !JoinTimer.NOTIFICATION.equals(saga)) {
            context.dispatcher().wake(saga, runs);
        } else {
            wake(saga);
        }
    }

    /** What {@link #wake(String)} takes to make the schedule timer read the next due time again. */
    public static final String SCHEDULES_CHANGED = ScheduleTimer.NOTIFICATION;

    /** The time jumped: read every due time again now (runs, schedules, join timeouts). */
    private void timeJumped() {
        context.dispatcher().probeNow();
        if (timer != null) {
            timer.nudge();
        }
        if (joinTimer != null) {
            joinTimer.nudge();
        }
    }

    public Completions completions() {
        return context.completions();
    }

    /**
     * Stops claiming, lets steps in flight finish within {@code timeout}, then interrupts what is left (its
     * transaction rolls back; another engine redoes the step).
     */
    public void stop(Duration timeout) {
        unsubscribeJumps.run();
        context.dispatcher().stop();
        if (timer != null) {
            timer.stop();
        }
        if (joinTimer != null) {
            joinTimer.stop();
        }
        if (pruner != null) {
            pruner.stop();
        }
        stopWorkers(timeout);
        stopHelpers();
        try (Connection c = bounded().getConnection()) {
            topology.engineStopped(c, config.engineId());
        } catch (SQLException | RuntimeException e) {
            log.debug("Engine {} could not record its stop: {}", config.engineId(), e.toString());
        }
        log.info("Engine {} stopped", config.engineId());
    }

    /** Waits for the workers' steps, then interrupts them; a step that ignores that cannot commit any more. */
    private void stopWorkers(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Thread worker : workers) {
            join(worker, deadline);
        }
        for (Thread worker : workers) {
            if (worker.isAlive()) {
                log.warn("Engine {}: {} did not finish its step within {}; interrupting it",
                        config.engineId(),
                        worker.getName(), timeout);
                worker.interrupt();
            }
        }
        long afterInterrupt = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        for (Thread worker : workers) {
            join(worker, afterInterrupt);
        }
        for (int i = 0; i < workers.size(); i++) {
            if (workers.get(i).isAlive()) {
                refuseLateCommit(workers.get(i), workerTasks.get(i));
            }
        }
    }

    /** Stops the connection watch, then waits for the listener and the timers (interrupting a stuck one). */
    private void stopHelpers() {
        if (watchThread != null) {
            watchThread.interrupt();
        }
        if (listenerThread != null) {
            join(listenerThread, System.nanoTime() + TimeUnit.SECONDS.toNanos(2));
        }
        if (timerThread != null) {
            join(timerThread, System.nanoTime() + TimeUnit.SECONDS.toNanos(2));
        }
        if (joinTimerThread != null) { // stuck waiting for a connection or the database: interrupted
            joinOrInterrupt(joinTimerThread);
        }
        if (prunerThread != null) { // in the middle of a batch: interrupted, it rolls back
            joinOrInterrupt(prunerThread);
        }
    }

    /** Waits 2 s for a thread, then interrupts it and waits 2 s more. */
    private static void joinOrInterrupt(Thread thread) {
        join(thread, System.nanoTime() + TimeUnit.SECONDS.toNanos(2));
        if (thread.isAlive()) {
            thread.interrupt();
            join(thread, System.nanoTime() + TimeUnit.SECONDS.toNanos(2));
        }
    }

    /**
     * A step that ignores interrupts is still running after the shutdown timeout: close() must not return while it
     * could still commit, so its session is terminated on the server. Its transaction rolls back there, its late
     * commit fails, and another engine runs the step again.
     */
    private void refuseLateCommit(Thread thread, Worker task) {
        String working = task.working();
        int pid = task.backendPid();
        if (working == null || pid == 0) {
            return;
        }
        log.error("Engine {}: {} is still running {} and ignores interrupts; terminating its database session"
                + " (backend {}) so that it cannot commit", config.engineId(), thread.getName(), working, pid);
        try (Connection c = config.dataSource().getConnection();
                java.sql.PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
            ps.setInt(1, pid);
            ps.execute();
        } catch (SQLException | RuntimeException e) {
            log.error("Engine {} could not terminate backend {}: {}", config.engineId(), pid, e.toString());
        }
    }

    private static void join(Thread t, long deadline) {
        try {
            long left = deadline - System.nanoTime();
            if (left > 0) {
                t.join(Duration.ofNanos(left));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String host() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }
}
