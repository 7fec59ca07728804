package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Outcome;
import dev.coop.schedule.Schedule;
import dev.coop.schedule.ScheduleSummary;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.Invariants;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link ScheduleTest}'s fixed period on the cluster: {@code schedule} is a Citus local table there
 * (docs/guide/citus.md, "The distribution"), so a firing, which moves the schedule on the coordinator and launches its message on the
 * message's worker, commits both or neither (two phases, one worker prepared). Each period's message runs and commits
 * once, and the schedule names the last one.
 */
class CitusScheduleTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Tick(String label) {
    }

    @Test
    void a_fixed_period_fires_on_the_cluster_and_each_message_commits_once() throws Exception {
        Topic<Tick> topic = Topic.of("citus-ticks", Tick.class);
        Saga<Tick> saga = Saga.on(topic, "citus-tick-counter").step("count", step -> {
        }).build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(saga).start();
                TwoPhaseCommits.Held held = TwoPhaseCommits.held(db)) {
            CoopClient client = engine.client();
            long before = TwoPhaseCommits.count(db);
            client.schedule("citus-every-second", topic, new Tick("p"), Schedule.every(Duration.ofSeconds(1)));
            List<MessageId> fired = new ArrayList<>();
            Await.until("three periods fired", WAIT, () -> {
                ScheduleSummary now = client.schedules().stream()
                        .filter(s -> s.name().equals("citus-every-second")).findFirst().orElseThrow();
                if (now.lastMessage() != null && !fired.contains(now.lastMessage())) {
                    fired.add(now.lastMessage());
                }
                return fired.size() >= 3;
            });
            client.unschedule("citus-every-second");
            for (MessageId id : fired) {
                assertThat(client.awaitCompletion(id, WAIT)).as("message %s", id).isEqualTo(Outcome.COMMITTED);
                Invariants.assertAll(client.events(id));
            }
            int launched = CitusFaults.count(db.dataSource(), "SELECT count(*)::int FROM coop.message WHERE topic = ?",
                    topic.name());
            assertThat(launched).as("messages the schedule launched").isGreaterThanOrEqualTo(3);
            assertThat(TwoPhaseCommits.count(db) - before).as("two-phase commits: one per firing, none per step")
                    .isEqualTo(launched);
        }
    }
}
