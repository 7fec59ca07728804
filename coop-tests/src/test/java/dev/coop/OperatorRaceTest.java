package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunView;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Operator actions on one hierarchy take turns: of two undo requests issued together for a root and its child, the
 * second is checked only after the first committed, so the parent never compensates before its child.
 */
class OperatorRaceTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void rolling_back_a_root_and_its_child_at_once_accepts_one_of_them() throws Exception {
        Topic<Empty> parentTopic = Topic.of("race-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("race-child", Empty.class);
        Saga<Empty> parent = Saga.on(parentTopic, "race-parent").step("launch", step -> {
            step.launch(childTopic, new Empty());
        }).compensateWith((step, cause) -> {
        }).build();
        Saga<Empty> child = Saga.on(childTopic, "race-child").step("one", step -> {
        }).compensateWith((step, cause) -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parent, child).start()) {
            CoopClient client = engine.client();
            for (int round = 0; round < 20; round++) {
                MessageId root = client.launch(parentTopic, new Empty());
                assertThat(client.awaitCompletion(root, WAIT)).isEqualTo(Outcome.COMMITTED);
                RunView childRun = client.tree(root).runs().getFirst().children().getFirst();
                CyclicBarrier start = new CyclicBarrier(2);
                List<CompletableFuture<Boolean>> calls = new ArrayList<>();
                calls.add(CompletableFuture.supplyAsync(() -> accepted(start, () -> client.rollback(root, "root"))));
                calls.add(CompletableFuture.supplyAsync(
                        () -> accepted(start, () -> client.rollback(childRun.lineage(), "child"))));
                long accepted = calls.stream().filter(CompletableFuture::join).count();
                assertThat(accepted).as("round %d", round).isBetween(1L, 2L); // 2 only one after the other
                // either request rolls the child back; wait for that, then for the root to settle
                dev.coop.test.Await.until("the child rolled back", WAIT, () -> client.events(root).stream()
                        .anyMatch(e -> "race-child".equals(e.saga()) && e.type() == EventType.ROLLED_BACK));
                Outcome outcome = client.awaitCompletion(root, WAIT);
                List<Event> events = client.events(root);
                long childRolledBack = events.stream().filter(e -> "race-child".equals(e.saga())
                        && e.type() == EventType.ROLLED_BACK).mapToLong(Event::id).min().orElse(Long.MAX_VALUE);
                long parentCompensated = events.stream().filter(e -> "race-parent".equals(e.saga())
                        && "Rollback of launch".equals(e.step())).mapToLong(Event::id).min().orElse(Long.MAX_VALUE);
                if (parentCompensated != Long.MAX_VALUE) {
                    assertThat(childRolledBack).as("round %d: the child rolled back before its parent compensated",
                            round).isLessThan(parentCompensated);
                }
                assertThat(events.stream().filter(e -> "race-child".equals(e.saga())
                        && e.type() == EventType.ROLLED_BACK)).as("round %d: the child rolled back once", round)
                        .hasSize(1);
                assertThat(outcome).isIn(Outcome.COMMITTED, Outcome.ROLLED_BACK);
            }
        }
    }

    private static boolean accepted(CyclicBarrier start, Runnable action) {
        try {
            start.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        try {
            action.run();
            return true;
        } catch (CoopValidationException refused) {
            return false;
        }
    }
}
