package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunCount;
import dev.coop.test.CitusDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A rollback that asks committed children to roll back, on Citus ({@code RootChildRollbacks}): the children read by
 * the parent's root, their {@code ROLLBACK_EMITTED} from bound values, the committed ones woken by root, and the
 * commits they no longer show counted on the coordinator's {@code run_count}. It commits in one phase (rows added to
 * {@code pg_dist_transaction}, {@link TwoPhaseCommits}), and the counts over time still show the children's commits
 * besides their rollbacks, as {@code RunCountsTest} on plain PostgreSQL.
 */
class CitusOnePhaseRollbackTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void a_rollback_asking_committed_children_to_roll_back_commits_in_one_phase_and_keeps_their_counts()
            throws Exception {
        TwoPhaseCommits.logRemoteCommands(db);
        Coop.client(db.dataSource());
        Topic<Empty> orders = Topic.of("citus-1pc-rollback", Empty.class);
        Topic<Empty> lines = Topic.of("citus-1pc-rollback-line", Empty.class);
        Saga<Empty> order = Saga.on(orders, "citus-1pc-rollback")
                .step("lines", step -> {
                    for (int i = 0; i < 3; i++) {
                        step.launch(lines, new Empty());
                    }
                })
                .step("check", step -> {
                    throw new IllegalStateException("refused");
                })
                .build();
        Saga<Empty> line = Saga.on(lines, "citus-1pc-rollback-line").step("add", step -> {
        }).build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(order, line).start();
                TwoPhaseCommits.Held held = TwoPhaseCommits.held(db)) {
            CoopClient client = engine.client();
            long before = TwoPhaseCommits.count(db);
            MessageId id = client.launch(orders, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            long after = TwoPhaseCommits.count(db);
            System.out.println("2PC rows of a fan-out of three, its commits, and the rollback of all: "
                    + (after - before));
            List<Event> events = client.events(id);
            Invariants.assertAll(events);
            assertThat(events.stream().filter(e -> e.type() == EventType.ROLLBACK_EMITTED).count())
                    .as(EventLog.table(events)).isEqualTo(3);
            assertThat(TwoPhaseCommits.idsOf(db, id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
            RunCount counted = total(client.counts(Duration.ofHours(2)), "citus-1pc-rollback-line");
            assertThat(counted.launched()).isEqualTo(3);
            assertThat(counted.committed()).as("the commits the rollback superseded").isEqualTo(3);
            assertThat(counted.rolledBack()).isEqualTo(3);
            assertThat(after - before).as("two-phase commits").isZero();
        } finally {
            TwoPhaseCommits.copyRemoteCommands(db);
        }
    }

    /**
     * A parent waiting for an external task past its happy path's deadline (a {@link dev.coop.test.TestClock} moved
     * past it) gives up: the task's run is settled unstarted ({@code RootChildren}: the run by root, its events, the
     * task TIMED_OUT on the coordinator) and the parent rolls back; that transaction writes the task and the
     * worker, so it commits in two phases, one worker prepared (atomic).
     */
    @Test
    void a_parent_past_its_deadline_settling_its_open_task_and_rolling_back() throws Exception {
        TwoPhaseCommits.logRemoteCommands(db);
        Coop.client(db.dataSource());
        Topic<Empty> topic = Topic.of("citus-1pc-task-deadline", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-1pc-task-deadline")
                .step("ask", step -> step.openTask("citus-1pc-deadline", new Empty(),
                        TaskOptions.none().key("citus-1pc-deadline/" + step.messageId().value())))
                .step("never", step -> {
                })
                .build();
        dev.coop.test.TestClock clock = new dev.coop.test.TestClock();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).clock(clock).register(saga).start();
                TwoPhaseCommits.Held held = TwoPhaseCommits.held(db)) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Empty(), CooperationContext.of(Deadlines.HAPPY_PATH,
                    Deadline.at(clock.instant().plus(Duration.ofHours(1)), "test")));
            String key = "citus-1pc-deadline/" + id.value();
            dev.coop.test.Await.until("the parent waits for its task", WAIT, () -> client.events(id).stream()
                    .anyMatch(e -> e.type() == EventType.SUSPENDED));
            long waiting = TwoPhaseCommits.count(db);
            TwoPhaseCommits.mark(db, "give-up start");
            clock.advance(Duration.ofHours(2));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            long after = TwoPhaseCommits.count(db);
            System.out.println("2PC rows of a give-up settling an open task and the rollback: " + (after - waiting));
            assertThat(client.externalTask(key).orElseThrow().state()).isEqualTo(TaskState.TIMED_OUT);
            List<Event> events = client.events(id);
            Invariants.assertAll(events);
            assertThat(TwoPhaseCommits.idsOf(db, id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
            assertThat(after - waiting).as("two-phase commits: the give-up writes the task and the worker")
                    .isEqualTo(1);
        } finally {
            TwoPhaseCommits.copyRemoteCommands(db);
        }
    }

    private static RunCount total(List<RunCount> counts, String saga) {
        return counts.stream().filter(n -> n.saga().equals(saga))
                .reduce(new RunCount(saga, null, 0, 0, 0, 0, 0), (a, b) -> new RunCount(saga, null,
                        a.launched() + b.launched(), a.committed() + b.committed(), a.rolledBack() + b.rolledBack(),
                        a.rollbackFailed() + b.rollbackFailed(), a.parked() + b.parked()));
    }
}
