package dev.coop;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The engine process that {@link CitusKillTest} kills: two workers on the Citus coordinator, poll-only, running
 * {@link CitusKillTest#sagas}. Prints {@code ENGINE <id>} once started, {@code HOLDING <run>} in the first step it
 * runs, which then never returns (its transaction stays open on the hierarchy's worker until the process dies), and
 * {@code RAN <run> <step>} after every other step body. Arguments: JDBC URL, user, password.
 */
final class CitusKillChild {
    private CitusKillChild() {
    }

    public static void main(String[] args) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(args[0]);
        config.setUsername(args[1]);
        config.setPassword(args[2]);
        config.setMaximumPoolSize(5);
        CountDownLatch never = new CountDownLatch(1);
        AtomicBoolean holding = new AtomicBoolean();
        Saga<?>[] sagas = CitusKillTest.sagas(step -> {
            if (holding.compareAndSet(false, true)) {
                say("HOLDING " + step.runId());
                never.await();
            }
            say("RAN " + step.runId() + " " + step.step());
        });
        CoopEngine engine = Coop.engine(new HikariDataSource(config)).name("doomed").workers(2)
                .notifications(false).pollInterval(Duration.ofMillis(50)).register(sagas).start();
        say("ENGINE " + engine.id());
        never.await();
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
