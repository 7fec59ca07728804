package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Order;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A service in another language completes an external task by the protocol alone: the Node participant's
 * {@code completeTask} (participants/node/complete-task.js). Skipped when node or the participant's node_modules are
 * missing, as {@link NodeParticipantTest} is.
 */
class NodeTaskCompletionTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void the_node_participant_completes_a_task_a_java_saga_waits_for(DataSource dataSource) throws Exception {
        Path participant = NodeParticipantTest.PARTICIPANT;
        Assumptions.assumeTrue(participant != null && Files.isDirectory(participant.resolve("node_modules/pg")),
                "Node task completion skipped: participants/node/node_modules is missing ('cd participants/node &&"
                        + " npm ci')");
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
            assertThat(node(participant, token, "{\"label\":\"DHL-42\"}")).isEqualTo("SETTLED");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.result(id, String.class)).isEqualTo("DHL-42");
            assertThat(node(participant, "label/n1", "{\"label\":\"DHL-42\"}")).isEqualTo("ALREADY_SETTLED");
            assertThat(client.externalTask(token).orElseThrow().settledBy()).contains("node-complete-task");
            dev.coop.test.Invariants.assertAll(client.events(id));
        }
    }

    private static String node(Path participant, String tokenOrKey, String result) throws Exception {
        URI url = URI.create(db.jdbcUrl().substring("jdbc:".length()));
        ProcessBuilder builder = new ProcessBuilder("node", "complete-task.js", tokenOrKey, result)
                .directory(participant.toFile()).redirectErrorStream(true);
        Map<String, String> env = builder.environment();
        env.put("PGHOST", url.getHost());
        env.put("PGPORT", String.valueOf(url.getPort() < 0 ? 5432 : url.getPort()));
        env.put("PGDATABASE", url.getPath().substring(1));
        env.put("PGUSER", db.server().user());
        env.put("PGPASSWORD", db.server().password() == null ? "" : db.server().password());
        Process p = builder.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("node output: %s", out).isZero();
        return out;
    }
}
