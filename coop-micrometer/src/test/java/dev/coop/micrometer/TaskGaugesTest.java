package dev.coop.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.TaskView;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Open external tasks by name, and the age of the oldest, as gauges that move by themselves. */
class TaskGaugesTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    private static final Duration WAIT = Duration.ofSeconds(30);

    record Job(int n) {
    }

    @Test
    void open_task_gauges_follow_the_tasks_without_anyone_refreshing_them(DataSource dataSource) {
        Topic<Job> topic = Topic.of("metrics.tasks", Job.class);
        Saga<Job> saga = Saga.on(topic, "metrics-tasks").step("ask", step -> {
            step.openTask("approval", step.payload());
            step.openTask("approval", step.payload());
            step.openTask("payment", step.payload());
        }).build();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start();
                CoopMetrics metrics = new CoopMetrics(registry)
                        .withTaskGauges(engine.client(), Duration.ofMillis(20))) {
            engine.client().launch(topic, new Job(1));
            Await.until("two approvals counted", WAIT, () -> open(registry, "approval") == 2);
            Await.until("one payment counted", WAIT, () -> open(registry, "payment") == 1);
            assertThat(registry.get("coop.tasks.oldest.age").tag("name", "payment").gauge().value())
                    .isGreaterThanOrEqualTo(0);

            for (TaskView task : engine.client().openTasks("approval", 10)) {
                engine.client().complete(task.token(), "yes");
            }
            Await.until("the approvals gone from the gauge", WAIT, () -> open(registry, "approval") == 0);
            assertThat(open(registry, "payment")).isEqualTo(1);
        }
    }

    @Test
    void task_gauges_need_a_positive_refresh(DataSource dataSource) {
        CoopClient client = CoopClient.builder(dataSource).build();
        assertThatThrownBy(() -> new CoopMetrics(new SimpleMeterRegistry()).withTaskGauges(client, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("refresh");
    }

    /** The gauge's value, 0 when the name has no row (no open task of that name). */
    private static double open(MeterRegistry registry, String name) {
        Gauge gauge = registry.find("coop.tasks.open").tag("name", name).gauge();
        return gauge == null ? 0 : gauge.value();
    }
}
