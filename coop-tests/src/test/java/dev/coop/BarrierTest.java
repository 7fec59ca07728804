package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The step barrier while children are in flight: a parent waits for a slow child, and waiting never delays other runs,
 * not even runs of the same saga.
 */
class BarrierTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Job(boolean slow) {
    }

    @Test
    void parent_step_waits_for_a_slow_child_run(DataSource dataSource) {
        Topic<Empty> parentTopic = Topic.of("slow-child-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("slow-child-child", Empty.class);
        Topic<Empty> otherTopic = Topic.of("slow-child-other", Empty.class);
        StepGate gate = new StepGate();
        AtomicBoolean nextStepRan = new AtomicBoolean();
        Saga<Empty> parent = Saga.on(parentTopic, "slow-child-parent-handler")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> nextStepRan.set(true))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "slow-child-child-handler")
                .step("slow", step -> gate.pass())
                .build();
        Saga<Empty> other = Saga.on(otherTopic, "slow-child-other-handler")
                .step("quick", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(parent, child, other).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(parentTopic, new Empty());
            gate.awaitArrivals(1, WAIT);

            assertThat(client.statuses(id)).containsExactly(RunStatus.WAITING);
            // the engine keeps working meanwhile: an unrelated hierarchy completes while the parent keeps waiting
            MessageId unrelated = client.launch(otherTopic, new Empty());
            assertThat(client.awaitCompletion(unrelated, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.statuses(id)).containsExactly(RunStatus.WAITING);
            assertThat(nextStepRan).isFalse();
            assertThat(EventLog.rows(client.events(id))).containsExactly(
                    "EMITTED - -",
                    "SEEN slow-child-parent-handler -",
                    "EMITTED slow-child-parent-handler launch",
                    "SUSPENDED slow-child-parent-handler launch");

            gate.open();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(nextStepRan).isTrue();
            List<Event> events = client.events(id);
            assertThat(EventLog.rows(events)).containsExactly(
                    "EMITTED - -",
                    "SEEN slow-child-parent-handler -",
                    "EMITTED slow-child-parent-handler launch",
                    "SUSPENDED slow-child-parent-handler launch",
                    "SEEN slow-child-child-handler -",
                    "SUSPENDED slow-child-child-handler slow",
                    "COMMITTED slow-child-child-handler slow",
                    "SUSPENDED slow-child-parent-handler after",
                    "COMMITTED slow-child-parent-handler after");
            Invariants.assertAll(events);
        }
    }

    @Test
    void parent_waits_for_a_slow_grandchild_too(DataSource dataSource) {
        Topic<Empty> parentTopic = Topic.of("slow-grandchild-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("slow-grandchild-child", Empty.class);
        Topic<Empty> grandchildTopic = Topic.of("slow-grandchild-grandchild", Empty.class);
        StepGate gate = new StepGate();
        Saga<Empty> parent = Saga.on(parentTopic, "slow-grandchild-parent-handler")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "slow-grandchild-child-handler")
                .step("launch", step -> step.launch(grandchildTopic, new Empty()))
                .build();
        Saga<Empty> grandchild = Saga.on(grandchildTopic, "slow-grandchild-grandchild-handler")
                .step("slow", step -> gate.pass())
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(parent, child, grandchild).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(parentTopic, new Empty());
            gate.awaitArrivals(1, WAIT);

            List<Event> whileHeld = client.events(id);
            MessageId childMessage = whileHeld.get(2).messageId();
            assertThat(client.statuses(id)).containsExactly(RunStatus.WAITING);
            assertThat(client.statuses(childMessage)).containsExactly(RunStatus.WAITING);
            assertThat(whileHeld).extracting(Event::type).doesNotContain(EventType.COMMITTED);

            gate.open();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            Invariants.assertAll(client.events(id));
        }
    }

    @Test
    void runs_of_one_saga_do_not_block_each_other(DataSource dataSource) {
        Topic<Job> jobs = Topic.of("independent-runs-jobs", Job.class);
        Topic<Empty> slowTopic = Topic.of("independent-runs-slow", Empty.class);
        Topic<Empty> quickTopic = Topic.of("independent-runs-quick", Empty.class);
        StepGate gate = new StepGate();
        Saga<Job> saga = Saga.on(jobs, "independent-runs-handler")
                .step("delegate", step -> step.launch(step.payload().slow() ? slowTopic : quickTopic, new Empty()))
                .step("finish", step -> {
                })
                .build();
        Saga<Empty> slow = Saga.on(slowTopic, "independent-runs-slow-handler")
                .step("slow", step -> gate.pass())
                .build();
        Saga<Empty> quick = Saga.on(quickTopic, "independent-runs-quick-handler")
                .step("quick", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(saga, slow, quick).start()) {
            CoopClient client = engine.client();
            MessageId a = client.launch(jobs, new Job(true));
            gate.awaitArrivals(1, WAIT);
            assertThat(client.statuses(a)).containsExactly(RunStatus.WAITING);

            // run B of the same saga goes through both steps while run A waits for its held child
            MessageId b = client.launch(jobs, new Job(false));
            assertThat(client.awaitCompletion(b, WAIT)).isEqualTo(Outcome.COMMITTED);
            MessageId c = client.launch(jobs, new Job(false));
            assertThat(client.awaitCompletion(c, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.statuses(a)).containsExactly(RunStatus.WAITING);

            gate.open();
            assertThat(client.awaitCompletion(a, WAIT)).isEqualTo(Outcome.COMMITTED);
            Invariants.assertAll(client.events(a));
            Invariants.assertAll(client.events(b));
        }
    }
}
