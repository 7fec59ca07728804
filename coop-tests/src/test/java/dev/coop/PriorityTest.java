package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Priorities: among the runnable runs of a saga the highest priority is claimed first, and within one priority the
 * earliest due first; a high priority that is not due yet holds nothing up.
 */
class PriorityTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Job(String name) {
    }

    @Test
    void runs_are_claimed_by_priority_then_in_launch_order(DataSource dataSource) {
        Topic<Job> topic = Topic.of("prio-jobs", Job.class);
        List<String> order = new CopyOnWriteArrayList<>();
        Saga<Job> saga = Saga.on(topic, "prio-jobs-saga").step("run", step -> order.add(step.payload().name()))
                .build();
        // launched with no engine running, then one worker claims them one by one
        try (CoopEngine registering = Coop.engine(dataSource).register(saga).start()) {
            registering.id(); // registers the saga for the topic
        }
        CoopClient client = Coop.client(dataSource);
        int[] priorities = {0, 5, -3, 5, 10, 0, -10, 10, 1};
        List<MessageId> launched = new ArrayList<>();
        for (int i = 0; i < priorities.length; i++) {
            LaunchOptions options = priorities[i] == 0
                    ? LaunchOptions.none()
                    : LaunchOptions.none().priority(priorities[i]);
            launched.add(client.launch(topic, new Job("p" + priorities[i] + "#" + i), options));
        }
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(saga).start()) {
            for (MessageId id : launched) {
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
        }
        assertThat(order).containsExactly("p10#4", "p10#7", "p5#1", "p5#3", "p1#8", "p0#0", "p0#5", "p-3#2",
                "p-10#6");
    }

    @Test
    void a_high_priority_run_that_is_not_due_yet_holds_nothing_up(DataSource dataSource) {
        Topic<Job> topic = Topic.of("prio-later", Job.class);
        List<String> order = new CopyOnWriteArrayList<>();
        Saga<Job> saga = Saga.on(topic, "prio-later-saga").step("run", step -> order.add(step.payload().name()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId later = client.launch(topic, new Job("later"), LaunchOptions.none().priority(10)
                    .at(client.now().plus(Duration.ofHours(1))));
            MessageId now = client.launch(topic, new Job("now"), LaunchOptions.none().priority(-10));
            assertThat(client.awaitCompletion(now, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.statuses(later)).containsExactly(RunStatus.RUNNABLE);
            assertThat(order).containsExactly("now");
            assertThat(client.tree(later).runs().get(0).ordering().priority()).isEqualTo(10);
        }
    }
}
