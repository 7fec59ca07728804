package dev.coop.spring;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.EngineListener;
import dev.coop.Saga;
import dev.coop.TimeSource;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Starts the Coop engine with every {@code Saga} bean once the application context is refreshed, and closes it
 * (waiting for steps in flight, up to {@code coop.engine.shutdown-timeout}) when the context stops, before the
 * DataSource closes. Without Saga beans no engine runs. The sagas and listeners are looked up when the engine starts,
 * not when this bean is created, so that a saga may use beans that use the {@code CoopClient}.
 */
public class CoopEngineLifecycle implements SmartLifecycle {
    /** Late to start and early to stop: after the beans a step may use are ready, before they are gone. */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 512;
    private static final Logger log = LoggerFactory.getLogger(CoopEngineLifecycle.class);

    private final DataSource dataSource;
    private final CoopProperties properties;
    private final Supplier<List<Saga<?>>> sagaBeans;
    private final Supplier<List<EngineListener>> listeners;
    /** Where the engine reads the time (a {@code TimeSource} bean), asked for when it starts; null: the database's. */
    private Supplier<TimeSource> clock = () -> null;
    private volatile List<Saga<?>> sagas;
    private volatile CoopEngine engine;
    private volatile boolean notificationsUp;
    private volatile boolean connectionsStarved;

    public CoopEngineLifecycle(DataSource dataSource, CoopProperties properties, List<Saga<?>> sagas,
            List<EngineListener> listeners) {
        this(dataSource, properties, () -> List.copyOf(sagas), () -> List.copyOf(listeners));
    }

    /**
     * @param sagas the sagas to run, asked for when the engine starts
     * @param listeners the engine's listeners, asked for when the engine starts
     */
    public CoopEngineLifecycle(DataSource dataSource, CoopProperties properties, Supplier<List<Saga<?>>> sagas,
            Supplier<List<EngineListener>> listeners) {
        this.dataSource = dataSource;
        this.properties = properties;
        this.sagaBeans = sagas;
        this.listeners = listeners;
    }

    /** The engine reads the time from what {@code clock} gives when it starts (null: the database's clock). */
    CoopEngineLifecycle clock(Supplier<TimeSource> clock) {
        this.clock = clock;
        return this;
    }

    /** The running engine; empty before the context started, after it stopped, and without Saga beans. */
    public Optional<CoopEngine> engine() {
        return Optional.ofNullable(engine);
    }

    /** Whether the engine's notification connection is listening (false when notifications are off). */
    public boolean notificationsUp() {
        return notificationsUp;
    }

    /** Whether the engine's workers get no connection from the DataSource (it then processes nothing). */
    public boolean connectionsStarved() {
        return connectionsStarved;
    }

    /** Whether the running engine listens for notifications (as configured; never on Citus, where it polls). */
    public boolean notificationsEnabled() {
        CoopEngine running = engine;
        return running != null && running.listens();
    }

    /** The names of the sagas this engine runs. */
    public List<String> sagas() {
        return sagaList().stream().map(Saga::name).toList();
    }

    private List<Saga<?>> sagaList() {
        List<Saga<?>> known = sagas;
        if (known == null) {
            known = List.copyOf(sagaBeans.get());
            sagas = known;
        }
        return known;
    }

    @Override
    public synchronized void start() {
        if (engine != null) {
            return;
        }
        List<Saga<?>> sagas = sagaList();
        if (sagas.isEmpty()) {
            log.info("No Saga beans: Coop runs no engine in this application (client only)");
            return;
        }
        CoopProperties.Engine e = properties.getEngine();
        CoopEngine.Builder builder = Coop.engine(dataSource).name(e.getName()).schema(properties.getSchema())
                .workers(e.getWorkers()).maxRunsPerTransaction(e.getMaxRunsPerTransaction())
                .schedules(e.isSchedules()).migrate(properties.isMigrate()).shutdownTimeout(e.getShutdownTimeout())
                .databaseTimeout(e.getDatabaseTimeout()).idleInTransactionTimeout(e.getIdleInTransactionTimeout())
                .maxPayloadBytes(properties.getMaxPayloadBytes()).requireHandlers(properties.isRequireHandlers())
                .register(sagas.toArray(Saga<?>[]::new)).listener(new Notifications());
        if (e.getPollInterval() != null) { // unset: the engine's default (1 s; 100 ms on Citus)
            builder.pollInterval(e.getPollInterval());
        }
        if (e.getNotifications() != null) { // unset: on, except on Citus
            builder.notifications(e.getNotifications());
        }
        listeners.get().forEach(builder::listener);
        TimeSource time = clock.get();
        if (time != null) {
            builder.clock(time);
        }
        engine = builder.start();
    }

    @Override
    public synchronized void stop() {
        CoopEngine running = engine;
        engine = null;
        if (running != null) {
            running.close();
        }
        notificationsUp = false;
        connectionsStarved = false;
    }

    @Override
    public boolean isRunning() {
        return engine != null;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }

    /** Follows the engine's notification connection and its workers' connections, for the health indicator. */
    private final class Notifications implements EngineListener {
        @Override
        public void notificationsConnected() {
            notificationsUp = true;
        }

        @Override
        public void notificationsLost(Throwable cause) {
            notificationsUp = false;
        }

        @Override
        public void connectionsStarved(java.time.Duration waited) {
            connectionsStarved = true;
        }

        @Override
        public void connectionsAvailable() {
            connectionsStarved = false;
        }
    }
}
