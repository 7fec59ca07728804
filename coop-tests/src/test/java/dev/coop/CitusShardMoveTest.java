package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import dev.coop.test.StepRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A shard group moved to the other worker by Citus's {@code citus_move_shard_placement} (with
 * {@code shard_transfer_mode => 'block_writes'}: the test cluster runs {@code wal_level = replica}) while two
 * engines run hierarchies, some of them on that shard: writes to it wait for the move, and every hierarchy then
 * completes, each step once (its body too: a step in flight on the group holds the group's shard lock, so the move
 * waits for it, {@link CitusShardMoveStepTest}), no attempt failed and nothing rolled back, nothing lost or doubled
 * (docs/guide/citus.md, "Faults"). Prints the deadlocks the workers logged, if any.
 */
class CitusShardMoveTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(40);
    static final int HIERARCHIES = 24;
    static final int CHILDREN = 2;

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource());
    }

    @Test
    void a_shard_moved_while_runs_are_in_flight_loses_and_doubles_nothing() throws Exception {
        Topic<Empty> rootTopic = Topic.of("move-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("move-child", Empty.class);
        StepRecorder recorder = new StepRecorder();
        Saga<Empty> root = Saga.on(rootTopic, "move-root")
                .step("fan-out", step -> {
                    recorder.record(step);
                    for (int i = 0; i < CHILDREN; i++) {
                        step.launch(childTopic, new Empty());
                    }
                })
                .step("middle", recorder::record)
                .step("fan-in", recorder::record)
                .build();
        Saga<Empty> child = Saga.on(childTopic, "move-child").step("one", recorder::record)
                .step("two", recorder::record).build();
        CoopClient client = Coop.client(db.dataSource());
        List<CoopEngine> engines = new ArrayList<>();
        java.util.Map<Integer, Long> logs = CitusFaults.logSizes(db.cluster());
        try {
            for (int i = 0; i < 2; i++) {
                engines.add(CitusHappyPathTest.engine(db.newDataSource(6)).name("move-" + i).workers(3)
                        .register(root, child).start());
            }
            List<MessageId> launched = new ArrayList<>();
            for (int i = 0; i < HIERARCHIES; i++) {
                launched.add(client.launch(rootTopic, new Empty()));
            }
            Await.until("some runs committed", WAIT, () -> count(
                    "SELECT count(*)::int FROM coop.event WHERE type = 'COMMITTED'") >= 3);
            UUID unfinished = launched.stream().map(MessageId::value)
                    .filter(r -> count("SELECT count(*)::int FROM coop.run WHERE root_id = ? AND status <> 'COMMITTED'",
                            r) > 0)
                    .findFirst().orElseThrow(() -> new AssertionError("every hierarchy finished before the move"));
            long shard = CitusFaults.shardOf(db.dataSource(), unfinished);
            int from = CitusFaults.workerOf(db.dataSource(), unfinished);
            int to = db.cluster().ports().get(1) == from ? db.cluster().ports().get(2) : db.cluster().ports().get(1);
            int inFlight = count("""
                    SELECT count(DISTINCT root_id)::int FROM coop.run WHERE status <> 'COMMITTED'
                       AND get_shard_id_for_distribution_column('coop.run', root_id) = ?""", shard);
            CitusFaults.move(db.dataSource(), shard, from, to);
            assertThat(CitusFaults.workerOf(db.dataSource(), unfinished)).as("the shard group moved").isEqualTo(to);
            assertThat(inFlight).as("hierarchies unfinished on the shard when it moved").isPositive();

            for (MessageId id : launched) {
                Outcome outcome = client.awaitCompletion(id, WAIT);
                assertThat(outcome).as("hierarchy %s: %s", id, outcome == Outcome.COMMITTED
                        ? ""
                        : EventLog.table(client.events(id))).isEqualTo(Outcome.COMMITTED);
            }
            List<Event> events = CoopTables.of(db.dataSource()).allEvents();
            Invariants.assertAll(events);
            assertThat(events).filteredOn(e -> e.type() == EventType.ATTEMPT_FAILED
                    || e.type() == EventType.ROLLING_BACK || e.type() == EventType.ROLLED_BACK)
                    .as("no failed attempt, nothing rolled back").isEmpty();
            int runs = HIERARCHIES * (1 + CHILDREN);
            assertThat(events).filteredOn(e -> e.type() == EventType.COMMITTED).hasSize(runs);
            assertThat(count("SELECT count(*)::int FROM coop.run")).isEqualTo(runs);
            recorder.assertEachStepRanOnce();
            assertThat(recorder.total()).isEqualTo(HIERARCHIES * (3 + 2 * CHILDREN));
        } finally {
            engines.forEach(CoopEngine::close);
            String deadlocks = CitusFaults.deadlocks(db.cluster(), logs);
            if (!deadlocks.isEmpty()) { // a step retried after one runs its body again: say whose they were
                System.out.println("deadlocks the workers logged during the test:\n" + deadlocks);
            }
        }
    }

    static int count(String sql, Object... values) {
        return CitusFaults.count(db.dataSource(), sql, values);
    }
}
