package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Order;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A service in another language completes an external task by the protocol alone: the Node participant's
 * {@code completeTask} (participants/node/complete-task.js). Skipped when node or the participant's node_modules are
 * missing (failed on CI), as {@link NodeParticipantTest} is.
 */
class NodeTaskCompletionTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void the_node_participant_completes_a_task_a_java_saga_waits_for(DataSource dataSource) throws Exception {
        NodeProcess.assumeInstalled();
        Topic<Order> topic = Topic.of("node-task", Order.class);
        Saga<Order> saga = Saga.on(topic, "node-task-saga")
                .step("ask", step -> step.openTask("shipping-label", step.payload(),
                        TaskOptions.none().key("label/" + step.payload().id())))
                .step("use", step -> step.setResult(step.taskResult("shipping-label", Map.class).get("label")))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("n1", 1));
            Await.until("open", WAIT, () -> client.externalTask("label/n1").isPresent());
            String token = client.externalTask("label/n1").orElseThrow().token();
            assertThat(node(token, "{\"label\":\"DHL-42\"}")).isEqualTo("SETTLED");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(id, String.class)).isEqualTo("DHL-42");
            assertThat(node("label/n1", "{\"label\":\"DHL-42\"}")).isEqualTo("ALREADY_SETTLED");
            assertThat(client.externalTask(token).orElseThrow().settledBy()).contains("node-complete-task");
            dev.coop.test.Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void a_task_completed_by_node_settles_the_join_its_message_is_a_member_of(DataSource dataSource) throws Exception {
        NodeProcess.assumeInstalled();
        Topic<Order> topic = Topic.of("node-joined-task", Order.class);
        Saga<Order> saga = Saga.on(topic, "node-joined-task-saga")
                .step("ask", step -> step.openTask("invoice", step.payload(),
                        TaskOptions.none().key("invoice/" + step.payload().id())))
                .step("use", step -> step.setResult(step.taskResult("invoice", Map.class).get("number")))
                .build();
        Topic<dev.coop.join.JoinResult> joined = Topic.of("node-task-joined", dev.coop.join.JoinResult.class);
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Order("n2", 1));
            Await.until("open", WAIT, () -> client.externalTask("invoice/n2").isPresent());
            MessageId task = client.externalTask("invoice/n2").orElseThrow().message();
            var join = client.joins().start(dev.coop.join.JoinSpec.expecting(1).key("n2").onComplete(joined)
                    .onFail(joined));
            client.joins().attach(join, task);

            assertThat(node("invoice/n2", "{\"number\":\"INV-7\"}")).isEqualTo("SETTLED");

            // the task's run finished in Node's transaction: the join of its message is settled there too
            assertThat(client.joins().get(join).status()).isEqualTo(dev.coop.join.JoinStatus.COMPLETED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(id, String.class)).isEqualTo("INV-7");
        }
    }

    private static String node(String tokenOrKey, String result) throws Exception {
        NodeProcess.Ran ran = NodeProcess.run(db, "complete-task.js", tokenOrKey, result);
        assertThat(ran.exitCode()).as("node output: %s", ran.output()).isZero();
        return ran.output();
    }
}
