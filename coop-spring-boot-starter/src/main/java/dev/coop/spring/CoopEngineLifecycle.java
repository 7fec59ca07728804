package dev.coop.spring;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.EngineListener;
import dev.coop.Saga;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Starts the Coop engine with every {@code Saga} bean once the application context is refreshed, and closes it
 * (waiting for steps in flight, up to {@code coop.engine.shutdown-timeout}) when the context stops, before the
 * DataSource closes. Without Saga beans no engine runs.
 */
public class CoopEngineLifecycle implements SmartLifecycle, EngineListener {
    /** Late to start and early to stop: after the beans a step may use are ready, before they are gone. */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 512;
    private static final Logger log = LoggerFactory.getLogger(CoopEngineLifecycle.class);

    private final DataSource dataSource;
    private final CoopProperties properties;
    private final List<Saga<?>> sagas;
    private final List<EngineListener> listeners;
    private volatile CoopEngine engine;
    private volatile boolean notificationsUp;
    private volatile boolean connectionsStarved;

    public CoopEngineLifecycle(DataSource dataSource, CoopProperties properties, List<Saga<?>> sagas,
            List<EngineListener> listeners) {
        this.dataSource = dataSource;
        this.properties = properties;
        this.sagas = List.copyOf(sagas);
        this.listeners = List.copyOf(listeners);
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

    /** Whether notifications are configured at all. */
    public boolean notificationsEnabled() {
        return properties.getEngine().isNotifications();
    }

    /** The names of the sagas this engine runs. */
    public List<String> sagas() {
        return sagas.stream().map(Saga::name).toList();
    }

    @Override
    public synchronized void start() {
        if (engine != null) {
            return;
        }
        if (sagas.isEmpty()) {
            log.info("No Saga beans: Coop runs no engine in this application (client only)");
            return;
        }
        CoopProperties.Engine e = properties.getEngine();
        CoopEngine.Builder builder = Coop.engine(dataSource).name(e.getName()).schema(properties.getSchema())
                .workers(e.getWorkers()).pollInterval(e.getPollInterval()).notifications(e.isNotifications())
                .schedules(e.isSchedules()).migrate(properties.isMigrate()).shutdownTimeout(e.getShutdownTimeout())
                .maxPayloadBytes(properties.getMaxPayloadBytes()).requireHandlers(properties.isRequireHandlers())
                .register(sagas.toArray(Saga<?>[]::new)).listener(this);
        listeners.forEach(builder::listener);
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
