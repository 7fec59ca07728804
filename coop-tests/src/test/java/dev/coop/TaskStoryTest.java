package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunView;
import dev.coop.render.JsonRenderer;
import dev.coop.render.RenderOptions;
import dev.coop.render.TextRenderer;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** An external task's story in the tree (text and JSON): key, state, who settled it, when, and how long it waited. */
class TaskStoryTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    record Request(String id) {
    }

    @Test
    void a_completed_task_shows_its_key_state_settler_times_and_wait(DataSource dataSource) {
        Topic<Request> topic = Topic.of("task-story", Request.class);
        Saga<Request> saga = Saga.on(topic, "task-story-saga")
                .step("ask", step -> step.openTask("approval", step.payload(),
                        TaskOptions.none().key("story/" + step.payload().id())))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Request("1"));
            Await.until("open", Duration.ofSeconds(30), () -> client.externalTask("story/1").isPresent());
            RunView open = client.tree(id).runs().getFirst().children().getFirst();
            assertThat(open.task()).isNotNull();
            assertThat(open.task().state()).isEqualTo(TaskState.OPEN);
            assertThat(open.task().settledBy()).isNull();

            client.complete("story/1", "yes", "ops:ada");
            assertThat(client.awaitCompletion(id, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
            RunView task = client.tree(id).runs().getFirst().children().getFirst();
            assertThat(task.task()).satisfies(t -> {
                assertThat(t.name()).isEqualTo("approval");
                assertThat(t.key()).isEqualTo("story/1");
                assertThat(t.state()).isEqualTo(TaskState.COMPLETED);
                assertThat(t.settledBy()).isEqualTo("ops:ada");
                assertThat(t.openedAt()).isNotNull();
                assertThat(t.settledAt()).isAfterOrEqualTo(t.openedAt());
            });

            String text = new TextRenderer(RenderOptions.defaults()).render(client.tree(id));
            assertThat(text).contains("external task approval", "key 'story/1'", "COMPLETED by ops:ada", "opened",
                    "settled", "waited");
            String json = new JsonRenderer(true).render(client.tree(id));
            assertThat(json).contains("\"task\"", "\"key\" : \"story/1\"", "\"state\" : \"COMPLETED\"",
                    "\"settledBy\" : \"ops:ada\"", "\"waitedMs\"");
            assertThat(new JsonRenderer(true).readHierarchy(json).runs().getFirst().children().getFirst().task())
                    .satisfies(t -> assertThat(t.settledBy()).isEqualTo("ops:ada"))
                    .satisfies(
                            t -> assertThat(t.settledAt().toInstant()).isEqualTo(task.task().settledAt().toInstant()));
        }
    }
}
