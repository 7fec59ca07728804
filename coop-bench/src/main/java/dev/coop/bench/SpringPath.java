package dev.coop.bench;

import dev.coop.Saga;
import dev.coop.bench.Payloads.Job;
import dev.coop.spring.BenchSpringSteps;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.List;
import java.util.Map;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The cost of the Spring path: W1 (32 client threads) whose three steps each read one row, once on the plain engine
 * (the step's connection) and once as a Spring Boot application runs it (a JdbcTemplate in a Spring transaction that a
 * DataSourceTransactionManager begins on the step's connection), runs of the two variants interleaved so that drift
 * of a shared machine hits both alike.
 */
final class SpringPath {
    private static final int THREADS = 32;
    private static final String SQL = "SELECT 1";

    private SpringPath() {
    }

    static void run(Options o, Report report) {
        Runs plain = new Runs("spring/plain");
        Runs spring = new Runs("spring/jdbcTemplate");
        int total = o.warmups + o.runs;
        for (int i = 0; i < total; i++) {
            boolean warm = i < o.warmups;
            for (int v = 0; v < 2; v++) { // alternate which variant goes first
                boolean viaSpring = (i + v) % 2 == 1;
                Map<String, Object> m = once(o, viaSpring, "r" + i + (viaSpring ? "s" : "p"));
                (viaSpring ? spring : plain).add(m, warm, warm ? "warm-up" : "run " + (i - o.warmups + 1));
            }
        }
        String name = "W1 " + o.w1Sagas + " sagas x 3 steps reading a row, " + THREADS + " threads";
        report.row(name + ", plain engine", "steps/s", plain, "stepsPerSec", null, null, null);
        report.row(name + ", Spring (JdbcTemplate)", "steps/s", spring, "stepsPerSec", null, null, null);
        double cost = 1 - spring.median("stepsPerSec") / plain.median("stepsPerSec");
        report.row(name, "throughput cost of the Spring path", Stats.round(cost * 100, 1), "<= 10 %", cost <= 0.10);
        report.row(name + ", plain engine", "CPU us/step, engine threads", plain, "engineCpuUsPerStep", null, null,
                null);
        report.row(name + ", Spring (JdbcTemplate)", "CPU us/step, engine threads", spring, "engineCpuUsPerStep",
                null, null, null);
        report.workloads.put("spring", Map.of("plain", plain.toMap(), "spring", spring.toMap(), "costPercent",
                Stats.round(cost * 100, 1)));
    }

    private static Map<String, Object> once(Options o, boolean viaSpring, String tag) {
        try (RunEnv env = RunEnv.fresh(o, "spring", true)) {
            if (!viaSpring) {
                return env.bracket(Throughput.w1(o, env.db, env.pool, env.physTxPerSec, o.w1Sagas, THREADS, tag, 0,
                        List.of(), topic -> saga(topic, tag, step -> {
                            try (PreparedStatement s = step.connection().prepareStatement(SQL);
                                    ResultSet rs = s.executeQuery()) {
                                rs.next();
                            }
                        })));
            }
            JdbcTemplate jdbc = new JdbcTemplate(env.pool);
            return env.bracket(Throughput.w1(o, env.db, env.pool, env.physTxPerSec, o.w1Sagas, THREADS, tag, 0,
                    List.of(BenchSpringSteps.listener(env.pool)),
                    topic -> saga(topic, tag, step -> jdbc.queryForObject(SQL, Integer.class))));
        } catch (Exception e) {
            throw new IllegalStateException("spring run " + tag + " failed: " + e, e);
        }
    }

    private static Saga<Job> saga(dev.coop.Topic<Job> topic, String tag, dev.coop.StepBody<Job> body) {
        return Saga.on(topic, "w1-saga-" + tag).step("a", body).step("b", body).step("c", body).build();
    }
}
