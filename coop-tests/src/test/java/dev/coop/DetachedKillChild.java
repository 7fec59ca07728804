package dev.coop;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.util.concurrent.CountDownLatch;

/**
 * The engine process that {@link DetachedStepKillTest} kills: one worker taking rounds of up to 8 runs of
 * {@link DetachedStepKillTest#SAGA}, on the real clock so that the round's budget passes. The step of payload
 * {@code detach} prints {@code DETACHED} and never returns, without using its connection: it leaves its round. Prints
 * {@code ENGINE <id>} once started. Arguments: JDBC URL, user, password.
 */
final class DetachedKillChild {
    private DetachedKillChild() {
    }

    public static void main(String[] args) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(args[0]);
        config.setUsername(args[1]);
        config.setPassword(args[2]);
        config.setMaximumPoolSize(4);
        CountDownLatch never = new CountDownLatch(1);
        Saga<String> saga = DetachedStepKillTest.saga(step -> {
            if (step.payload().equals("detach")) {
                say("DETACHED");
                never.await();
            }
        });
        CoopEngine engine = Coop.engine(new HikariDataSource(config)).name("doomed").workers(1)
                .maxRunsPerTransaction(8).register(saga).start();
        say("ENGINE " + engine.id());
        never.await();
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
