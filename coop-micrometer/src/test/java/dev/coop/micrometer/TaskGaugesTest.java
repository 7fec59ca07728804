package dev.coop.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Open external tasks by name, and the age of the oldest, as gauges. */
class TaskGaugesTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    record Job(int n) {
    }

    @Test
    void open_external_tasks_are_counted_by_name(DataSource dataSource) {
        Topic<Job> topic = Topic.of("metrics.tasks", Job.class);
        Saga<Job> saga = Saga.on(topic, "metrics-tasks").step("ask", step -> {
            step.openTask("approval", step.payload());
            step.openTask("approval", step.payload());
            step.openTask("payment", step.payload());
        }).build();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopMetrics metrics = new CoopMetrics(registry).withTaskGauges(engine.client(), Duration.ZERO);
            engine.client().launch(topic, new Job(1));
            Await.until("tasks open", Duration.ofSeconds(30), () -> engine.client().openTasks(10).size() == 3);
            metrics.refreshTaskGauges();
            assertThat(registry.get("coop.tasks.open").tag("name", "approval").gauge().value()).isEqualTo(2);
            assertThat(registry.get("coop.tasks.open").tag("name", "payment").gauge().value()).isEqualTo(1);
            assertThat(registry.get("coop.tasks.oldest.age").tag("name", "payment").gauge().value())
                    .isGreaterThanOrEqualTo(0);
        }
    }
}
