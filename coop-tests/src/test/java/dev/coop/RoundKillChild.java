package dev.coop;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.coop.test.TestClock;
import java.util.concurrent.CountDownLatch;

/**
 * The engine process that {@link StepRoundKillTest} kills: one worker taking rounds of up to 8 runs of
 * {@link StepRoundKillTest#SAGA}. Prints {@code ENGINE <id>} once started, {@code RAN <payload> <backend pid>} after
 * each step's write, and {@code HOLDING <backend pid>} in the step of payload {@code hold}, which then never returns:
 * the round stays open, uncommitted, until the process is killed. Arguments: JDBC URL, user, password.
 */
final class RoundKillChild {
    private RoundKillChild() {
    }

    public static void main(String[] args) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(args[0]);
        config.setUsername(args[1]);
        config.setPassword(args[2]);
        config.setMaximumPoolSize(3);
        CountDownLatch never = new CountDownLatch(1);
        Saga<String> saga = StepRoundKillTest.saga(step -> {
            int pid = StepRoundTest.pid(step.connection());
            if (step.payload().equals("hold")) {
                say("HOLDING " + pid);
                never.await();
            }
            say("RAN " + step.payload() + " " + pid);
        });
        // frozen (after the launches, so the runs are due), so that a fresh JVM's slow first steps do not spend the
        // round's time budget before the step that holds
        CoopEngine engine = Coop.engine(new HikariDataSource(config)).name("doomed").workers(1)
                .maxRunsPerTransaction(8).clock(new TestClock()).register(saga).start();
        say("ENGINE " + engine.id());
        never.await();
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
