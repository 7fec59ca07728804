package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A cancellation and the transaction that commits the last of its scope exclude each other (issue 34, item 8): raced
 * many times, lined up by a barrier, each round ends one of the two ways the answer names. {@code REQUESTED}: the
 * hierarchy rolled back and nothing of it committed; {@code ALREADY_FINISHED}: it committed, and no
 * {@code CANCELLATION_REQUESTED} follows its {@code COMMITTED} in the log. With rounds of one run and of eight, the
 * root committing by its own last step, by its last child's commit, and by a client's completion of an external task.
 */
class CancellationRaceTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase(4);

    static final Duration WAIT = Duration.ofSeconds(30);
    static final int ROUNDS = Integer.getInteger("races", 100);

    /** A run's payload: its round, and whether it is the one whose step meets the cancel at the barrier. */
    record Race(int round, boolean racer) {
    }

    /** The barrier of the round under way; a step meets it once (a step retried as database trouble goes on). */
    final AtomicReference<CyclicBarrier> barrier = new AtomicReference<>();
    final Set<Integer> met = ConcurrentHashMap.newKeySet();

    private void meet(Race race) throws Exception {
        if (race.racer() && met.add(race.round())) {
            barrier.get().await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    private CoopEngine engine(int maxRunsPerTransaction, Saga<?>... sagas) {
        return Coop.engine(db.dataSource()).workers(2).maxRunsPerTransaction(maxRunsPerTransaction)
                .register(sagas).start();
    }

    @ParameterizedTest(name = "maxRunsPerTransaction {0}")
    @ValueSource(ints = {1, 8})
    void the_roots_last_step(int maxRunsPerTransaction) throws Exception {
        Topic<Race> topic = Topic.of("cancel-race-last-" + maxRunsPerTransaction, Race.class);
        String name = "cancel-race-last-" + maxRunsPerTransaction;
        Saga<Race> saga = Saga.on(topic, name).step("last", step -> meet(step.payload())).build();
        try (CoopEngine engine = engine(maxRunsPerTransaction, saga)) {
            CoopClient client = engine.client();
            race(client, name, round -> {
                client.launch(topic, new Race(round, false)); // company, so that rounds form
                MessageId root = client.launch(topic, new Race(round, true));
                client.launch(topic, new Race(round, false));
                return root;
            }, (root, round) -> {
            });
        }
    }

    @ParameterizedTest(name = "maxRunsPerTransaction {0}")
    @ValueSource(ints = {1, 8})
    void the_last_childs_commit(int maxRunsPerTransaction) throws Exception {
        Topic<Race> topic = Topic.of("cancel-race-parent-" + maxRunsPerTransaction, Race.class);
        Topic<Race> children = Topic.of("cancel-race-child-" + maxRunsPerTransaction, Race.class);
        String name = "cancel-race-parent-" + maxRunsPerTransaction;
        Saga<Race> parent = Saga.on(topic, name).step("launch", step -> {
            for (int k = 0; k < 3; k++) { // the racer among them: claimed with the others when rounds form
                step.launch(children, new Race(step.payload().round(), k == 2));
            }
        }).compensateWith((step, cause) -> {
        }).build();
        Saga<Race> child = Saga.on(children, name + "-child").step("work", step -> meet(step.payload())).build();
        try (CoopEngine engine = engine(maxRunsPerTransaction, parent, child)) {
            CoopClient client = engine.client();
            race(client, name, round -> client.launch(topic, new Race(round, false)), (root, round) -> {
            });
        }
    }

    @ParameterizedTest(name = "maxRunsPerTransaction {0}")
    @ValueSource(ints = {1, 8})
    void an_external_tasks_completion(int maxRunsPerTransaction) throws Exception {
        Topic<Race> topic = Topic.of("cancel-race-task-" + maxRunsPerTransaction, Race.class);
        String name = "cancel-race-task-" + maxRunsPerTransaction;
        Map<Integer, String> tokens = new ConcurrentHashMap<>();
        Saga<Race> saga = Saga.on(topic, name).step("ask", step -> tokens.put(step.payload().round(),
                step.openTask("approval", Map.of("round", step.payload().round())).token()))
                .compensateWith((step, cause) -> {
                }).build();
        try (CoopEngine engine = engine(maxRunsPerTransaction, saga)) {
            CoopClient client = engine.client();
            race(client, name, round -> {
                MessageId root = client.launch(topic, new Race(round, false));
                String token = Await.value("the task of round " + round, WAIT, () -> tokens.get(round));
                try {
                    Await.until("the root waits for its task", Duration.ofSeconds(5),
                            () -> client.statuses(root).equals(List.of(RunStatus.WAITING)));
                } catch (AssertionError e) {
                    throw new AssertionError(client.statuses(root) + "\n" + EventLog.table(client.events(root)), e);
                }
                return root;
            }, (root, round) -> { // the client's completion is the racer: it commits the root
                barrier.get().await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                try {
                    client.complete(tokens.get(round), Map.of("ok", true));
                } catch (dev.coop.failure.TaskRefusedException cancelledFirst) {
                    // the root gave up first and cancelled its open task
                }
            });
        }
    }

    /** What launches a round's hierarchy and returns its root. */
    private interface Launch {
        MessageId launch(int round) throws Exception;
    }

    /** A racer besides the cancel that is not a step (a client's completion); nothing for a step's race. */
    private interface Racer {
        void race(MessageId root, int round) throws Exception;
    }

    private void race(CoopClient client, String saga, Launch launch, Racer racer) throws Exception {
        int requested = 0;
        for (int round = 0; round < ROUNDS; round++) {
            CyclicBarrier start = new CyclicBarrier(2);
            barrier.set(start);
            MessageId root = launch.launch(round);
            int r = round;
            CompletableFuture<Void> other = CompletableFuture.runAsync(() -> {
                try {
                    racer.race(root, r);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            start.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            CancelResult answer = client.cancel(root, "race " + round);
            other.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            Outcome outcome = client.awaitCompletion(root, WAIT);
            List<Event> events = client.events(root);
            String log = EventLog.table(events);
            assertThat(answer).as("round %d", round).isIn(CancelResult.REQUESTED, CancelResult.ALREADY_FINISHED);
            List<Long> committed = ids(events, EventType.COMMITTED, saga);
            List<Long> cancelled = ids(events, EventType.CANCELLATION_REQUESTED, null);
            if (answer == CancelResult.REQUESTED) {
                requested++;
                assertThat(outcome).as("round %d: REQUESTED, so it rolled back\n%s", round, log)
                        .isEqualTo(Outcome.ROLLED_BACK);
                assertThat(committed).as("round %d: REQUESTED, so the root never committed\n%s", round, log)
                        .isEmpty();
                assertThat(cancelled).as("round %d\n%s", round, log).hasSize(1);
            } else {
                assertThat(outcome).as("round %d: ALREADY_FINISHED, so it committed\n%s", round, log)
                        .isEqualTo(Outcome.COMMITTED);
                assertThat(cancelled).as("round %d: nothing requested after the COMMITTED\n%s", round, log)
                        .isEmpty();
            }
            dev.coop.test.Invariants.assertAll(events);
        }
        System.out.printf("%s: %d of %d rounds answered REQUESTED%n", saga, requested, ROUNDS);
    }

    /** The ids of the log's events of a type, of a saga (null: any). */
    private static List<Long> ids(List<Event> events, EventType type, String saga) {
        List<Long> ids = new ArrayList<>();
        for (Event e : events) {
            if (e.type() == type && (saga == null || saga.equals(e.saga()))) {
                ids.add(e.id());
            }
        }
        return ids;
    }
}
