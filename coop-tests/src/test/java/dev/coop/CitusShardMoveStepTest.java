package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import dev.coop.test.StepRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A shard move ({@code citus_move_shard_placement}, {@code block_writes}) of a group with a step in flight waits for
 * that step (docs/guide/citus.md, "Faults"): the claim's lock takes a share lock on the group's shard metadata
 * ({@code ShardedClaims.SHARD_LOCK}), which the move takes exclusively. Without it the move ran between the step's
 * lock and its first write, the step's later statements went to the new placement, where nothing held the run, and
 * another engine claimed the run as well (seen in {@link CitusShardMoveTest} as a deadlock between the two SEENs, or
 * a step body run twice). Here the step is held, the move waits on a lock until it is let go, and the step commits
 * once, its body run once although a second engine polls the saga.
 */
class CitusShardMoveStepTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource());
    }

    @Test
    void a_move_waits_for_a_step_in_flight_on_the_group_and_the_step_commits_once() throws Exception {
        Topic<Empty> topic = Topic.of("move-held", Empty.class);
        StepGate gate = new StepGate();
        StepRecorder recorder = new StepRecorder();
        AtomicReference<UUID> held = new AtomicReference<>();
        Saga<Empty> saga = Saga.on(topic, "move-held").step("first", recorder::record)
                .step("held", step -> {
                    recorder.record(step);
                    if (held.compareAndSet(null, step.messageId().value())) {
                        gate.pass(); // its transaction holds the run (the claim's lock) and the group's shard lock
                    }
                })
                .step("after", recorder::record).build();
        CoopClient client = Coop.client(db.dataSource());
        List<CoopEngine> engines = new ArrayList<>();
        CompletableFuture<Void> moving = null;
        try {
            for (int i = 0; i < 2; i++) { // a second engine would claim the run if the step lost hold of it
                engines.add(CitusHappyPathTest.engine(db.newDataSource(4)).name("move-held-" + i).workers(2)
                        .register(saga).start());
            }
            MessageId id = client.launch(topic, new Empty());
            gate.awaitArrivals(1, WAIT);
            UUID root = id.value();
            assertThat(held.get()).isEqualTo(root);
            long shard = CitusFaults.shardOf(db.dataSource(), root);
            int from = CitusFaults.workerOf(db.dataSource(), root);
            int to = db.cluster().ports().get(1) == from ? db.cluster().ports().get(2) : db.cluster().ports().get(1);
            moving = CompletableFuture.runAsync(() -> CitusFaults.move(db.dataSource(), shard, from, to));
            Await.until("the move waits for the step in flight on its group", WAIT, () -> count("""
                    SELECT count(*)::int FROM pg_stat_activity
                     WHERE query LIKE '%citus_move_shard_placement%' AND pid <> pg_backend_pid()
                       AND wait_event_type = 'Lock'""") == 1);
            assertThat(moving).as("the move, while the step is held").isNotDone();
            gate.open();
            moving.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            assertThat(CitusFaults.workerOf(db.dataSource(), root)).as("the shard group moved").isEqualTo(to);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = client.events(id);
            Invariants.assertAll(events);
            assertThat(events).filteredOn(e -> e.type() == EventType.ATTEMPT_FAILED
                    || e.type() == EventType.ROLLING_BACK).isEmpty();
            recorder.assertEachStepRanOnce(); // the held step too: no other engine claimed its run meanwhile
            assertThat(recorder.total()).isEqualTo(3);
        } finally {
            gate.open();
            if (moving != null) {
                moving.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            }
            engines.forEach(CoopEngine::close);
        }
    }

    static int count(String sql, Object... values) {
        return CitusFaults.count(db.dataSource(), sql, values);
    }
}
