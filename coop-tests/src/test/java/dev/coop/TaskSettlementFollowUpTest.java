package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Order;
import dev.coop.inspect.Outcome;
import dev.coop.join.JoinId;
import dev.coop.join.JoinResult;
import dev.coop.join.JoinSpec;
import dev.coop.join.JoinStatus;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What follows a task's settlement as it follows a finishing run: the runs above it, and its joins. */
class TaskSettlementFollowUpTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void a_signal_awaited_in_a_last_step_finishes_the_runs_above_it(DataSource dataSource) {
        Topic<Order> topic = Topic.of("follow-parents", Order.class);
        Topic<Order> child = Topic.of("follow-children", Order.class);
        Saga<Order> parent = Saga.on(topic, "follow-parent")
                .step("launch", step -> step.launch(child, step.payload()))
                .build();
        Saga<Order> waiting = Saga.on(child, "follow-waiting")
                .step("wait", step -> step.awaitSignal("go", "follow/" + step.payload().id()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(parent, waiting).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("1", 1));
            Await.until("the signal awaited", WAIT, () -> client.externalTask("follow/1").isPresent());

            assertThat(client.signal("follow/1", "go", Duration.ofMinutes(1))).isEqualTo(SignalOutcome.DELIVERED);

            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.statuses(id)).containsOnly(RunStatus.COMMITTED);
        }
    }

    @Test
    void completing_a_task_settles_the_join_membership_of_its_message(DataSource dataSource) {
        Topic<Order> topic = Topic.of("follow-joined", Order.class);
        List<MessageId> taskMessages = new CopyOnWriteArrayList<>();
        Saga<Order> saga = Saga.on(topic, "follow-joined")
                .step("ask", step -> taskMessages.add(step.openTask("approval", step.payload(),
                        TaskOptions.none().key("joined/" + step.payload().id())).message()))
                .step("after", step -> {
                })
                .build();
        Topic<JoinResult> done = Topic.of("follow-join-done", JoinResult.class);
        Topic<JoinResult> failed = Topic.of("follow-join-failed", JoinResult.class);
        List<JoinResult> completions = new CopyOnWriteArrayList<>();
        Saga<JoinResult> onDone = Saga.on(done, "follow-join-done").step("record",
                step -> completions.add(step.payload())).build();
        Saga<JoinResult> onFailed = Saga.on(failed, "follow-join-failed").step("record", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga, onDone, onFailed).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("2", 1));
            Await.until("the task open", WAIT, () -> client.externalTask("joined/2").isPresent());
            JoinId join = client.joins().start(JoinSpec.expecting(1).onComplete(done).onFail(failed));
            client.joins().attach(join, taskMessages.getFirst());

            assertThat(client.complete("joined/2", "yes")).isEqualTo(TaskOutcome.SETTLED);

            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            Await.until("the join's on-complete message", WAIT, () -> !completions.isEmpty());
            assertThat(client.joins().get(join).status()).isEqualTo(JoinStatus.COMPLETED);
            assertThat(completions.getFirst().completed()).isEqualTo(1);
        }
    }
}
