package dev.coop.spring;

import dev.coop.CoopClient;
import dev.coop.RunStatus;
import java.util.Map;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/**
 * Coop's health: DOWN when the engine should run and does not, its notification connection is lost (the engine
 * then only polls), or its workers get no connection from the DataSource (it then processes nothing); WARNING when parked runs reach {@code coop.health.parked-threshold}; else UP.
 */
public class CoopHealthIndicator extends AbstractHealthIndicator {
    /** Parked runs need an operator; add it to {@code management.endpoint.health.status.order} to aggregate it. */
    public static final Status WARNING = new Status("WARNING", "Parked runs wait for an operator");

    private final CoopClient client;
    private final CoopEngineLifecycle engine;
    private final long parkedThreshold;

    public CoopHealthIndicator(CoopClient client, CoopEngineLifecycle engine, long parkedThreshold) {
        super("Coop health check failed");
        this.client = client;
        this.engine = engine;
        this.parkedThreshold = parkedThreshold;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        Map<RunStatus, Long> runs = client.unfinishedRuns();
        long parked = runs.getOrDefault(RunStatus.PARKED, 0L);
        builder.withDetail("runnable", runs.getOrDefault(RunStatus.RUNNABLE, 0L))
                .withDetail("waiting", runs.getOrDefault(RunStatus.WAITING, 0L)).withDetail("parked", parked);
        boolean engineDown = false;
        if (engine != null && !engine.sagas().isEmpty()) {
            builder.withDetail("engine", engine.engine().map(e -> e.id()).orElse("stopped"))
                    .withDetail("sagas", engine.sagas());
            engineDown = engine.engine().isEmpty();
            builder.withDetail("connections", engine.connectionsStarved() ? "starved" : "available");
            engineDown |= engine.engine().isPresent() && engine.connectionsStarved();
            if (engine.notificationsEnabled()) {
                builder.withDetail("notifications", engine.notificationsUp() ? "listening" : "lost");
                engineDown |= engine.engine().isPresent() && !engine.notificationsUp();
            }
        }
        if (engineDown) {
            builder.down();
        } else if (parkedThreshold > 0 && parked >= parkedThreshold) {
            builder.status(WARNING);
        } else {
            builder.up();
        }
    }
}
