package dev.coop.test;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.Saga;
import dev.coop.Topic;
import java.util.concurrent.CountDownLatch;

/**
 * A program like the demo, started by {@link CoopPostgresShutdownTest} in a JVM of its own: an engine on an
 * embedded server, closed before the server stops when the JVM is told to (SIGTERM).
 */
public final class ShutdownProbe {
    /** The payload of the probe's saga. */
    public record Ping(String id) {
    }

    private ShutdownProbe() {
    }

    public static void main(String[] args) throws Exception {
        CoopPostgres server = CoopPostgres.startEmbedded(java.util.Map.of());
        String database = server.createDatabase("shutdown_probe");
        var dataSource = server.dataSource(database, 12, "probe");
        Topic<Ping> topic = Topic.of("probe", Ping.class);
        CoopEngine engine = Coop.engine(dataSource).register(Saga.on(topic, "probe-saga").step("s", step -> {
        }).build()).start();
        CoopPostgres.beforeStopping(() -> {
            engine.close();
            try (var c = dataSource.getConnection(); var s = c.createStatement(); var rs = s.executeQuery("SELECT 1")) {
                rs.next();
                System.out.println("engine closed; database still up: " + rs.getInt(1));
            } catch (java.sql.SQLException e) {
                System.out.println("database already gone: " + e);
            }
            dataSource.close();
            System.out.flush();
        });
        engine.client().awaitCompletion(engine.client().launch(topic, new Ping("1")), java.time.Duration.ofSeconds(60));
        System.out.println("ready");
        System.out.flush();
        new CountDownLatch(1).await(); // until SIGTERM
    }
}
