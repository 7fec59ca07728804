package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.CoopCitus;
import dev.coop.test.CoopTables;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import dev.coop.test.StepRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The deterministic form of the fault that made {@link CitusWorkerRestartTest} and {@link CitusShardMoveTest} end a
 * hierarchy {@code ROLLED_BACK} under load (docs/guide/citus.md, "Faults"): the last step of a hierarchy on the live
 * worker, its transaction open after its claim, held while the other worker stops, then let go. Its transaction must
 * hold no connection to the stopped worker: the step commits while that worker is still down, its body ran once, and
 * the hierarchy has no failed attempt and no rollback. Until the claim read its candidates in a transaction of its
 * own, that transaction had read every shard, so its finishing advance's {@code SAVEPOINT} went to the stopped worker
 * too and failed ({@code XX000}); the step then ran again once the worker was back.
 */
class CitusLiveWorkerStepTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource());
    }

    @Test
    void a_last_step_on_the_live_worker_held_across_a_stop_of_the_other_commits_once_while_it_is_down()
            throws Exception {
        Topic<Empty> rootTopic = Topic.of("live-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("live-child", Empty.class);
        CoopCitus cluster = db.cluster();
        int up = cluster.ports().get(1);
        int down = cluster.ports().get(2);
        // holds longer than the stop and the wait after it can take: a stop once took 60 s under CI's load, and a
        // step let go by the gate's default limit (30 s) failed, so the test saw no commit
        StepGate gate = new StepGate(Duration.ofMinutes(3));
        StepRecorder recorder = new StepRecorder();
        AtomicReference<UUID> heldRoot = new AtomicReference<>();
        AtomicReference<UUID> heldRun = new AtomicReference<>();
        Saga<Empty> root = Saga.on(rootTopic, "live-root")
                .step("launch", step -> {
                    recorder.record(step);
                    step.launch(childTopic, new Empty());
                })
                .step("last", step -> {
                    recorder.record(step);
                    UUID rootId = step.messageId().value();
                    if (CitusFaults.workerOf(db.dataSource(), rootId) == up && heldRoot.compareAndSet(null, rootId)) {
                        heldRun.set(step.runId());
                        gate.pass(); // its transaction is open: the claim and the SEEN are in it
                    }
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "live-child").step("work", recorder::record).build();
        CoopClient client = Coop.client(db.dataSource());
        List<MessageId> launched = new ArrayList<>();
        boolean stopped = false;
        try (CoopEngine engine = CitusHappyPathTest.engine(db.newDataSource(6)).name("live-0").workers(3)
                .register(root, child).start()) {
            while (launched.stream().noneMatch(id -> CitusFaults.workerOf(db.dataSource(), id.value()) == up)) {
                launched.add(client.launch(rootTopic, new Empty()));
            }
            try {
                gate.awaitArrivals(1, WAIT);
                for (MessageId id : launched) { // nothing else is in flight when the worker stops
                    if (id.value().equals(heldRoot.get())) {
                        continue;
                    }
                    assertThat(client.awaitCompletion(id, WAIT)).as("hierarchy %s", id).isEqualTo(Outcome.COMMITTED);
                }
                cluster.stopNode(down);
                stopped = true;
                gate.open();
                // read by root: routed to the live worker, so they answer while the other is down
                Await.until("the held last step commits while the other worker is down", WAIT,
                        () -> count("SELECT count(*)::int FROM coop.event WHERE root_id = ? AND type = 'COMMITTED'"
                                + " AND saga = 'live-root'", heldRoot.get()) == 1);
                assertThat(recorder.count(heldRun.get(), "last")).as("the held step's body ran once").isEqualTo(1);
                assertThat(count("""
                        SELECT count(*)::int FROM coop.event WHERE root_id = ?
                           AND type IN ('ATTEMPT_FAILED', 'RETRIED', 'ROLLING_BACK', 'ROLLED_BACK', 'ROLLBACK_FAILED')
                        """, heldRoot.get())).as("failed attempts and rollbacks of the held hierarchy").isZero();
            } finally {
                if (stopped) {
                    cluster.startNode(down);
                }
                gate.open();
            }
            assertThat(client.awaitCompletion(new MessageId(heldRoot.get()), WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = CoopTables.of(db.dataSource()).allEvents();
            Invariants.assertAll(events);
            assertThat(events).filteredOn(e -> e.type() == EventType.ROLLING_BACK || e.type() == EventType.ROLLED_BACK)
                    .as("nothing rolled back").isEmpty();
            assertThat(events).filteredOn(e -> e.type() == EventType.COMMITTED).as("one root and one child each")
                    .hasSize(2 * launched.size());
            recorder.assertEachStepRanOnce();
            assertThat(recorder.total()).isEqualTo(3 * launched.size());
        }
    }

    static int count(String sql, Object... values) {
        return CitusFaults.count(db.dataSource(), sql, values);
    }
}
