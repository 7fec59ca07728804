package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Order;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A task whose parent's saga version no running engine has: it can be completed; the parent waits for its version. */
class ExternalTaskVersionTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    static Saga<Order> version(Topic<Order> topic, int version) {
        return Saga.on(topic, "task-version-saga").version(version)
                .step("ask", step -> step.openTask("approval", step.payload(),
                        TaskOptions.none().key("version/" + step.payload().id())))
                .step("after", step -> step.setResult("v" + version + " " + step.taskResult("approval", String.class)))
                .build();
    }

    @Test
    void a_task_of_a_version_being_retired_is_completed_and_its_run_continues_with_its_own_version(
            DataSource dataSource) {
        Topic<Order> topic = Topic.of("task-version", Order.class);
        MessageId id;
        try (CoopEngine v1 = Coop.engine(dataSource).register(version(topic, 1)).start()) {
            id = v1.client().launch(topic, new Order("1", 1));
            Await.until("open", WAIT, () -> v1.client().externalTask("version/1").isPresent());
        }
        CoopClient client = Coop.client(dataSource);
        try (CoopEngine v2 = Coop.engine(dataSource).register(version(topic, 2)).start()) {
            // the waiting run keeps version 1 from being retired
            assertThatThrownBy(() -> client.retireSagaVersion("task-version-saga", 1))
                    .isInstanceOf(CoopValidationException.class);
            assertThat(client.complete("version/1", "ok")).isEqualTo(TaskOutcome.SETTLED);
            assertThat(client.statuses(id)).containsExactly(RunStatus.RUNNABLE); // no engine has version 1
        }
        try (CoopEngine v1 = Coop.engine(dataSource).register(version(topic, 1)).start()) {
            assertThat(v1.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(v1.client().result(id, String.class)).isEqualTo("v1 ok");
        }
        assertThat(client.retireSagaVersion("task-version-saga", 1)).isTrue();
    }
}
