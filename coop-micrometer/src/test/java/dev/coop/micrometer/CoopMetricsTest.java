package dev.coop.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.RetryPolicy;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The meters of a hierarchy with a retried step, a barrier and a rollback, read from a registry. */
class CoopMetricsTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    record Job(int n) {
    }

    static final Topic<Job> PARENT = Topic.of("metrics.parent", Job.class);
    static final Topic<Job> CHILD = Topic.of("metrics.child", Job.class);

    @Test
    void stepsClaimsBarriersLaunchesAndRuns(DataSource dataSource) {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AtomicInteger attempts = new AtomicInteger();
        Saga<Job> parent = Saga.on(PARENT, "parent")
                .step("fan-out", step -> {
                    step.launch(CHILD, new Job(1));
                    step.launch(CHILD, new Job(2));
                }).compensateWith((step, cause) -> {
                })
                .step("after", step -> {
                    if (attempts.incrementAndGet() == 1) {
                        throw new IllegalStateException("flaky once");
                    }
                }).retry(RetryPolicy.attempts(3).initialDelay(Duration.ofMillis(10)))
                .step("last", step -> {
                    throw new IllegalArgumentException("for good");
                })
                .build();
        Saga<Job> child = Saga.on(CHILD, "child").step("work", step -> {
        }).build();
        CoopMetrics metrics = new CoopMetrics(registry);
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(parent, child).listener(metrics)
                .start()) {
            metrics.withRunGauges(engine.client(), Duration.ZERO);
            MessageId message = engine.client().launch(PARENT, new Job(0));
            assertThat(engine.client().awaitCompletion(message, Duration.ofSeconds(30)))
                    .isEqualTo(Outcome.ROLLED_BACK);
        }

        assertThat(step(registry, "child", "work", "step", "committed").count()).isEqualTo(2);
        assertThat(step(registry, "parent", "fan-out", "step", "committed").count()).isEqualTo(1);
        assertThat(step(registry, "parent", "after", "step", "retried").count()).isEqualTo(1);
        assertThat(step(registry, "parent", "after", "step", "committed").count()).isEqualTo(1);
        assertThat(step(registry, "parent", "last", "step", "failed").count()).isEqualTo(1);
        // a compensation is tagged with the name of the step it compensates
        assertThat(step(registry, "parent", "fan-out", "compensation", "committed").count()).isEqualTo(1);
        assertThat(registry.get("coop.launches").tag("topic", "metrics.child").counter().count()).isEqualTo(2);
        assertThat(registry.get("coop.launches").tag("topic", "metrics.parent").counter().count()).isEqualTo(1);
        assertThat(registry.get("coop.claim.latency").tag("saga", "child").timer().count()).isPositive();
        // twice: for the children of fan-out, and again for their rollback when the run rolls back
        assertThat(registry.get("coop.barrier.wait").tag("saga", "parent").timer().count()).isEqualTo(2);
        assertThat(registry.get("coop.runs").tag("status", "PARKED").gauge().value()).isZero();
        assertThat(registry.get("coop.runs").tag("status", "HELD").gauge().value()).isZero();
        assertThat(registry.get("coop.runs").tag("status", "RUNNABLE").gauge().value()).isZero();
        assertThat(registry.get("coop.notifications.reconnects").counter().count()).isZero();
    }

    private static Timer step(SimpleMeterRegistry registry, String saga, String step, String part, String outcome) {
        return registry.get("coop.step").tag("saga", saga).tag("step", step).tag("part", part)
                .tag("outcome", outcome).timer();
    }
}
