package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopStoreException;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A worker of the shared Citus cluster stopped at once ({@code pg_ctl stop -m immediate}, as a crash) while steps
 * of hierarchies on both workers run, then started again. What the test shows (docs/guide/citus.md, "Faults"): a
 * statement routed to the live worker still runs, and a step of a hierarchy on the live worker is not disturbed by
 * the stop (its transaction holds connections to that worker alone, the claim's candidates being read before it):
 * the held one commits while the other worker is down, its body run once. What reads every shard fails while a
 * worker is down (a client's reads by message id); the engines' claims and probes then read each worker apart
 * (NodeReads), so every hierarchy on the live worker completes while the other is down, and the ones on the down
 * worker wait; a launch whose root falls on the down worker fails with Citus's connection error, one whose root
 * falls on the live worker succeeds. Once the worker is back, every hierarchy completes, each step's
 * durable effect once, nothing rolled back, and every step body of a hierarchy on the live worker ran once. The node
 * is started again before the test ends: the cluster is shared by the suite.
 */
class CitusWorkerRestartTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource());
    }

    @Test
    void a_worker_restarted_mid_run_pauses_its_own_hierarchies_and_every_hierarchy_completes_once_when_it_returns()
            throws Exception {
        Topic<Empty> rootTopic = Topic.of("restart-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("restart-child", Empty.class);
        StepGate gate = new StepGate(Duration.ofMinutes(3)); // longer than a stop can take under load (once 60 s)
        StepRecorder recorder = new StepRecorder();
        Map<Integer, MessageId> held = new ConcurrentHashMap<>(); // the first hierarchy of each worker, held
        Map<MessageId, UUID> heldRuns = new ConcurrentHashMap<>(); // their root runs
        Map<UUID, UUID> rootOfRun = new ConcurrentHashMap<>(); // each root run's hierarchy, and each child's
        Saga<Empty> root = Saga.on(rootTopic, "restart-root")
                .step("hold", step -> {
                    record(recorder, rootOfRun, step);
                    if (held.putIfAbsent(workerOf(step.messageId().value()), step.messageId()) == null) {
                        heldRuns.put(step.messageId(), step.runId());
                        gate.pass();
                    }
                })
                .step("launch", step -> {
                    record(recorder, rootOfRun, step);
                    step.launch(childTopic, new Empty());
                })
                .step("after", step -> record(recorder, rootOfRun, step))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "restart-child")
                .step("work", step -> record(recorder, rootOfRun, step)).build();
        CoopCitus cluster = db.cluster();
        int down = cluster.ports().get(2);
        int up = cluster.ports().get(1);
        CoopClient client = Coop.client(db.dataSource());
        Map<MessageId, Integer> workerOf = new LinkedHashMap<>();
        List<CoopEngine> engines = new ArrayList<>();
        List<String> launchesWhileDown = new ArrayList<>();
        boolean stopped = false;
        try {
            for (int i = 0; i < 2; i++) {
                HikariDataSource pool = db.newDataSource(8);
                engines.add(CitusHappyPathTest.engine(pool).name("restart-" + i).workers(4)
                        .register(root, child).start());
            }
            while (workerOf.values().stream().filter(p -> p == down).count() < 3
                    || workerOf.values().stream().filter(p -> p == up).count() < 3) {
                MessageId id = client.launch(rootTopic, new Empty());
                workerOf.put(id, workerOf(id.value()));
            }
            gate.awaitArrivals(2, WAIT); // a step in progress on each worker
            MessageId onUp = held.get(up);

            cluster.stopNode(down);
            stopped = true;
            gate.open();
            // the held step on the live worker commits: its transaction's statements are routed to that worker only
            Await.until("the held step on the live worker commits", WAIT,
                    () -> suspended(onUp.value(), "hold") == 1);
            assertThat(recorder.counts().entrySet()).filteredOn(e -> e.getKey().step().equals("hold")
                    && heldRuns.get(onUp).equals(e.getKey().runId())).singleElement()
                    .satisfies(e -> assertThat(e.getValue()).as("the held step on the live worker ran once")
                            .isEqualTo(1));
            // what reads every shard fails: a client's statuses by message id (so awaitCompletion), and the claim
            assertThatThrownBy(() -> client.statuses(onUp)).isInstanceOf(CoopStoreException.class)
                    .hasMessageContaining("connection to the remote node postgres@127.0.0.1:" + down);
            // launches: each fails or succeeds by the worker of its root (a new UUID, so a new shard each time)
            while (launchesWhileDown.stream().distinct().count() < 2) {
                try {
                    MessageId id = client.launch(rootTopic, new Empty());
                    assertThat(workerOf(id.value())).as("a launch that succeeded").isEqualTo(up);
                    workerOf.put(id, up);
                    launchesWhileDown.add("launched");
                } catch (CoopStoreException e) {
                    assertThat(e).hasMessageContaining("connection to the remote node postgres@127.0.0.1:" + down
                            + " failed with the following error: Connection refused");
                    launchesWhileDown.add("refused");
                }
            }
            // the engines' claims and probes read each worker apart while one is down: what is on the live one ends
            for (Map.Entry<MessageId, Integer> hierarchy : workerOf.entrySet()) {
                if (hierarchy.getValue() == up) {
                    Await.until("hierarchy " + hierarchy.getKey() + " on the live worker commits while the other"
                            + " is down", WAIT, () -> committed(hierarchy.getKey().value()) == 1);
                }
            }
        } finally {
            if (stopped) {
                cluster.startNode(down);
            }
            gate.open();
        }
        try {
            for (MessageId id : workerOf.keySet()) {
                assertThat(client.awaitCompletion(id, WAIT)).as("hierarchy %s", id).isEqualTo(Outcome.COMMITTED);
            }
            List<Event> events = CoopTables.of(db.dataSource()).allEvents();
            Invariants.assertAll(events);
            assertThat(events).filteredOn(e -> e.type() == EventType.COMMITTED).as("one root and one child each")
                    .hasSize(2 * workerOf.size());
            assertThat(events).filteredOn(e -> e.type() == EventType.EMITTED && "launch".equals(e.step()))
                    .as("one child launched per hierarchy").hasSize(workerOf.size());
            Map<String, Long> stepsOfRuns = events.stream().filter(e -> e.type() == EventType.SUSPENDED)
                    .collect(Collectors.groupingBy(e -> e.lineage().last() + " " + e.step(), Collectors.counting()));
            assertThat(stepsOfRuns).as("each step of each run committed once").hasSize(4 * workerOf.size())
                    .allSatisfy((step, n) -> assertThat(n).as(step).isEqualTo(1));
            assertThat(events).filteredOn(e -> e.type() == EventType.ATTEMPT_FAILED
                    || e.type() == EventType.ROLLING_BACK || e.type() == EventType.ROLLED_BACK)
                    .as("no failed attempt, nothing rolled back").isEmpty();
            // a step of a hierarchy on the live worker was not disturbed by the stop: each body ran once
            assertThat(recorder.counts().entrySet()).filteredOn(e -> Integer.valueOf(up).equals(
                    workerOf.get(new MessageId(rootOfRun.get(e.getKey().runId())))))
                    .as("steps of hierarchies on the live worker").isNotEmpty()
                    .allSatisfy(e -> assertThat(e.getValue()).as(e.getKey().toString()).isEqualTo(1));
            // a step body whose commit the stop cut off ran again (at least once): the held one on the stopped worker
            int holds = recorder.counts().entrySet().stream().filter(e -> e.getKey().step().equals("hold"))
                    .mapToInt(Map.Entry::getValue).sum();
            assertThat(holds).as("the held step on the stopped worker ran again").isGreaterThan(workerOf.size());
        } finally {
            engines.forEach(CoopEngine::close);
        }
    }

    /** Records a step's run, and the hierarchy it belongs to (its lineage's first message, the root). */
    private static void record(StepRecorder recorder, Map<UUID, UUID> rootOfRun, StepContext<?> step) {
        recorder.record(step);
        rootOfRun.putIfAbsent(step.runId(), step.lineage().root());
    }

    static int workerOf(UUID root) {
        return CitusFaults.workerOf(db.dataSource(), root);
    }

    /** The COMMITTED of a hierarchy's root run, read by its root: routed to its worker alone. */
    static int committed(UUID root) {
        return CitusFaults.count(db.dataSource(), "SELECT count(*)::int FROM coop.event WHERE root_id = ?"
                + " AND type = 'COMMITTED' AND saga = 'restart-root'", root);
    }

    static int suspended(UUID root, String step) {
        return CitusFaults.suspended(db.dataSource(), root, step);
    }
}
