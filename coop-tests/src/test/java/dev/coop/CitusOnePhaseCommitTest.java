package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.CitusDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A step's transaction on Citus commits in one phase on the hierarchy's worker: a W1-like saga (three steps that do
 * nothing) and its client's launch leave no row in the coordinator's {@code pg_dist_transaction}, where Citus records
 * each two-phase commit it coordinates. The recovery of those rows is held back by a lock while the test counts.
 * Transactions that write an external task besides the worker (the coordinator's {@code external_task}, a Citus local
 * table) commit in two phases, one worker prepared each, so that a coordinator crash cannot keep one side alone.
 * {@code -Dcoop.citus.remoteCommands=true} copies the coordinator's log, with the commands Citus sent the workers
 * ({@code citus.log_remote_commands}), to {@code target/citus-1pc-remote.log}.
 */
class CitusOnePhaseCommitTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void a_three_step_saga_commits_its_steps_without_two_phase_commit() throws Exception {
        TwoPhaseCommits.logRemoteCommands(db);
        Coop.client(db.dataSource()); // migrations and the Citus layout
        try (Connection recovery = db.cluster().connect(db.cluster().ports().get(0), db.databaseName());
                Statement st = recovery.createStatement()) {
            recovery.setAutoCommit(false);
            // the recovery of two-phase commits takes this lock on the table, which the commits' inserts do not
            // wait for: held, no row is removed while the test counts (citus.recover_2pc_interval is SIGHUP only)
            st.execute("LOCK TABLE pg_dist_transaction IN SHARE UPDATE EXCLUSIVE MODE");
            runsThreeSteps();
            recovery.rollback();
        } finally {
            TwoPhaseCommits.copyRemoteCommands(db);
        }
    }

    private static void runsThreeSteps() throws Exception {
        Topic<Empty> topic = Topic.of("citus-1pc", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-1pc")
                .step("s1", step -> {
                })
                .step("s2", step -> {
                })
                .step("s3", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).notifications(false)
                .pollInterval(Duration.ofMillis(50)).register(saga).start()) {
            engine.client().awaitCompletion(engine.client().launch(topic, new Empty()), WAIT); // warm-up
            long beforeLaunch = TwoPhaseCommits.count(db);
            MessageId id = engine.client().launch(topic, new Empty());
            long afterLaunch = TwoPhaseCommits.count(db);
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            long afterSteps = TwoPhaseCommits.count(db);
            System.out.println("2PC of the client's launch: " + (afterLaunch - beforeLaunch)
                    + ", of three steps: " + (afterSteps - afterLaunch));
            assertThat(afterSteps - afterLaunch).as("two-phase commits of the steps").isZero();
            assertThat(afterLaunch - beforeLaunch).as("two-phase commits of the launch").isZero();
            java.util.List<dev.coop.inspect.Event> events = engine.client().events(id);
            dev.coop.test.Invariants.assertAll(events);
            // every id from the coordinator's event_id_seq: a worker's range starts at its group id << 48
            assertThat(TwoPhaseCommits.idsOf(db, id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
        }
    }

    /**
     * A step that launches one child (a scoped {@code EMIT_ONE}), and the child's count-off, which commits the parent
     * (its COMMITTED written after the child's events, {@code AdvanceSql.countOffOnCitus}): all in one phase.
     */
    @Test
    void a_step_launching_a_child_and_the_child_counting_off_at_it() throws Exception {
        Coop.client(db.dataSource());
        Topic<Empty> parentTopic = Topic.of("citus-1pc-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-1pc-child", Empty.class);
        Saga<Empty> parent = Saga.on(parentTopic, "citus-1pc-parent")
                .step("first", step -> {
                })
                .step("launch", step -> step.launch(childTopic, new Empty())) // committed by its child's count-off
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-1pc-child")
                .step("work", step -> {
                })
                .build();
        try (Connection recovery = db.cluster().connect(db.cluster().ports().get(0), db.databaseName());
                Statement st = recovery.createStatement();
                CoopEngine engine = Coop.engine(db.dataSource()).notifications(false)
                        .pollInterval(Duration.ofMillis(50)).register(parent, child).start()) {
            recovery.setAutoCommit(false);
            st.execute("LOCK TABLE pg_dist_transaction IN SHARE UPDATE EXCLUSIVE MODE");
            long before = TwoPhaseCommits.count(db);
            MessageId id = engine.client().launch(parentTopic, new Empty());
            long afterLaunch = TwoPhaseCommits.count(db);
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            long after = TwoPhaseCommits.count(db);
            System.out.println("2PC rows (one per worker prepared) of the client's launch: " + (afterLaunch - before)
                    + ", of the parent's two steps and the child's step with its count-off: " + (after - afterLaunch));
            java.util.List<dev.coop.inspect.Event> events = engine.client().events(id);
            dev.coop.test.Invariants.assertAll(events);
            assertThat(events.get(events.size() - 1).type()).as(dev.coop.test.EventLog.table(events))
                    .isEqualTo(dev.coop.inspect.EventType.COMMITTED);
            assertThat(TwoPhaseCommits.idsOf(db, id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
            assertThat(after - before).as("two-phase commits").isZero();
            recovery.rollback();
        }
    }

    /**
     * A step that launches several children at once (W2's fan-out: three of one topic, and one of a topic two sagas
     * handle, so five runs), one {@code INSERT ... VALUES} per table routed by the step's root; the children's
     * count-offs, the last of which commits the parent: all in one phase.
     */
    @Test
    void a_step_launching_several_children_and_their_count_offs() throws Exception {
        Coop.client(db.dataSource());
        Topic<Empty> parentTopic = Topic.of("citus-1pc-fan-out", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-1pc-fan-child", Empty.class);
        Topic<Empty> pairTopic = Topic.of("citus-1pc-fan-pair", Empty.class);
        Saga<Empty> parent = Saga.on(parentTopic, "citus-1pc-fan-out")
                .step("fan-out", step -> {
                    for (int k = 0; k < 3; k++) {
                        step.launch(childTopic, new Empty());
                    }
                    step.launch(pairTopic, new Empty());
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-1pc-fan-child").step("work", step -> {
        }).build();
        Saga<Empty> left = Saga.on(pairTopic, "citus-1pc-fan-left").step("work", step -> {
        }).build();
        Saga<Empty> right = Saga.on(pairTopic, "citus-1pc-fan-right").step("work", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).notifications(false)
                .pollInterval(Duration.ofMillis(50)).register(parent, child, left, right).start();
                TwoPhaseCommits.Held held = TwoPhaseCommits.held(db)) {
            long before = TwoPhaseCommits.count(db);
            MessageId id = engine.client().launch(parentTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            long after = TwoPhaseCommits.count(db);
            System.out.println("2PC rows of a fan-out of five runs and its count-offs: " + (after - before));
            java.util.List<dev.coop.inspect.Event> events = engine.client().events(id);
            dev.coop.test.Invariants.assertAll(events);
            assertThat(events.stream().filter(e -> e.type() == dev.coop.inspect.EventType.SEEN).count())
                    .as(dev.coop.test.EventLog.table(events)).isEqualTo(6);
            assertThat(TwoPhaseCommits.idsOf(db, id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
            assertThat(after - before).as("two-phase commits").isZero();
        }
    }

    /**
     * A client's launch on a topic nobody handles (its message and EMITTED event only), and a step that launches a
     * child nobody handles besides one that is handled: one phase.
     */
    @Test
    void messages_nobody_handles() throws Exception {
        Coop.client(db.dataSource());
        Topic<Empty> nobody = Topic.of("citus-1pc-nobody", Empty.class);
        Topic<Empty> parentTopic = Topic.of("citus-1pc-nobody-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-1pc-nobody-child", Empty.class);
        Saga<Empty> parent = Saga.on(parentTopic, "citus-1pc-nobody-parent")
                .step("alone", step -> step.launch(nobody, new Empty()))
                .step("both", step -> {
                    step.launch(nobody, new Empty());
                    step.launch(childTopic, new Empty());
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-1pc-nobody-child").step("work", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).notifications(false)
                .pollInterval(Duration.ofMillis(50)).register(parent, child).start();
                TwoPhaseCommits.Held held = TwoPhaseCommits.held(db)) {
            long before = TwoPhaseCommits.count(db);
            MessageId unhandled = engine.client().launch(nobody, new Empty());
            long afterLaunch = TwoPhaseCommits.count(db);
            MessageId id = engine.client().launch(parentTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            long after = TwoPhaseCommits.count(db);
            System.out.println("2PC rows of a launch nobody handles: " + (afterLaunch - before)
                    + ", of a saga launching messages nobody handles: " + (after - afterLaunch));
            assertThat(engine.client().events(unhandled)).extracting(dev.coop.inspect.Event::type)
                    .containsExactly(dev.coop.inspect.EventType.EMITTED);
            java.util.List<dev.coop.inspect.Event> events = engine.client().events(id);
            dev.coop.test.Invariants.assertAll(events);
            assertThat(events.stream().filter(e -> e.type() == dev.coop.inspect.EventType.EMITTED).count())
                    .as(dev.coop.test.EventLog.table(events)).isEqualTo(4);
            assertThat(TwoPhaseCommits.idsOf(db, id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
            assertThat(afterLaunch - before).as("two-phase commits of the launch").isZero();
            assertThat(after - afterLaunch).as("two-phase commits of the steps").isZero();
        }
    }

    /**
     * A step that opens an external task (its last), the client's completion, whose count-off commits the parent, and
     * a task of a step before the last that the client fails (its parent then runnable, rolling back). Each of
     * these transactions writes the coordinator's {@code external_task} (a Citus local table) and the hierarchy's
     * worker, so it commits in two phases, one worker prepared: atomic, where a plain table on the coordinator was
     * committed after the worker's one phase.
     */
    @Test
    void an_external_task_settled_by_a_client() throws Exception {
        Coop.client(db.dataSource());
        Topic<Empty> topic = Topic.of("citus-1pc-task", Empty.class);
        Topic<Empty> failing = Topic.of("citus-1pc-task-fails", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-1pc-task")
                .step("ask", step -> step.openTask("citus-1pc-approval", new Empty(),
                        TaskOptions.none().key("citus-1pc/" + step.messageId().value())))
                .build();
        Saga<Empty> fails = Saga.on(failing, "citus-1pc-task-fails")
                .step("ask", step -> step.openTask("citus-1pc-check", new Empty(),
                        TaskOptions.none().key("citus-1pc-fails/" + step.messageId().value())))
                .step("never", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).notifications(false)
                .pollInterval(Duration.ofMillis(50)).register(saga, fails).start();
                TwoPhaseCommits.Held held = TwoPhaseCommits.held(db)) {
            CoopClient client = engine.client();
            long before = TwoPhaseCommits.count(db);
            MessageId id = client.launch(topic, new Empty());
            dev.coop.test.Await.until("task open", WAIT, () -> client.externalTask("citus-1pc/" + id.value())
                    .filter(t -> t.state() == TaskState.OPEN).isPresent());
            long opened = TwoPhaseCommits.count(db);
            assertThat(client.complete("citus-1pc/" + id.value(), new Empty())).isEqualTo(TaskOutcome.SETTLED);
            long completed = TwoPhaseCommits.count(db);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            MessageId failed = client.launch(failing, new Empty());
            dev.coop.test.Await.until("task open", WAIT, () -> client.externalTask("citus-1pc-fails/"
                    + failed.value()).filter(t -> t.state() == TaskState.OPEN).isPresent());
            long openedAgain = TwoPhaseCommits.count(db);
            assertThat(client.fail("citus-1pc-fails/" + failed.value(), "no", "test")).isEqualTo(TaskOutcome.SETTLED);
            long failedNow = TwoPhaseCommits.count(db);
            assertThat(client.awaitCompletion(failed, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            System.out.println("2PC rows of a launch and a step opening a task: " + (opened - before)
                    + ", of its completion committing the parent: " + (completed - opened)
                    + ", of a failure: " + (failedNow - openedAgain));
            for (MessageId m : java.util.List.of(id, failed)) {
                java.util.List<dev.coop.inspect.Event> events = client.events(m);
                dev.coop.test.Invariants.assertAll(events);
                assertThat(TwoPhaseCommits.idsOf(db, m)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
            }
            assertThat(opened - before).as("two-phase commits of the launch and the step opening a task").isEqualTo(1);
            assertThat(completed - opened).as("two-phase commits of the completion").isEqualTo(1);
            assertThat(failedNow - openedAgain).as("two-phase commits of the failure").isEqualTo(1);
        }
    }

    /**
     * A step opens an external task with a timeout of its own (an hour, on a {@link dev.coop.test.TestClock}); the
     * clock moves past it, and the parent, claimed at its wake-up, times the task out ({@code RootTimeOut}: a child
     * failure) and rolls back, having no handler for it.
     */
    @Test
    void an_external_task_timing_out_and_its_parent_rolling_back() throws Exception {
        TwoPhaseCommits.logRemoteCommands(db);
        Coop.client(db.dataSource());
        Topic<Empty> topic = Topic.of("citus-1pc-task-timeout", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-1pc-task-timeout")
                .step("ask", step -> step.openTask("citus-1pc-timeout", new Empty(), TaskOptions.none()
                        .key("citus-1pc-timeout/" + step.messageId().value()).timeout(Duration.ofHours(1))))
                .step("never", step -> {
                })
                .build();
        dev.coop.test.TestClock clock = new dev.coop.test.TestClock();
        try (CoopEngine engine = Coop.engine(db.dataSource()).notifications(false).clock(clock)
                .pollInterval(Duration.ofMillis(50)).register(saga).start();
                TwoPhaseCommits.Held held = TwoPhaseCommits.held(db)) {
            CoopClient client = engine.client();
            long before = TwoPhaseCommits.count(db);
            MessageId id = client.launch(topic, new Empty());
            String key = "citus-1pc-timeout/" + id.value();
            dev.coop.test.Await.until("the parent waits for its task", WAIT, () -> client.events(id).stream()
                    .anyMatch(e -> e.type() == dev.coop.inspect.EventType.SUSPENDED));
            long opened = TwoPhaseCommits.count(db);
            TwoPhaseCommits.mark(db, "time-out start");
            clock.advance(Duration.ofHours(2));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            long timedOut = TwoPhaseCommits.count(db);
            TwoPhaseCommits.mark(db, "time-out end");
            System.out.println("2PC rows of a launch and a step opening a task with a timeout: " + (opened - before)
                    + ", of its time-out and the parent's rollback: " + (timedOut - opened));
            assertThat(client.externalTask(key).orElseThrow().state()).isEqualTo(TaskState.TIMED_OUT);
            java.util.List<dev.coop.inspect.Event> events = client.events(id);
            dev.coop.test.Invariants.assertAll(events);
            assertThat(TwoPhaseCommits.idsOf(db, id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
            assertThat(opened - before).as("two-phase commits of the launch and the opening step").isEqualTo(1);
            assertThat(timedOut - opened).as("two-phase commits of the time-out and the rollback").isEqualTo(1);
        } finally {
            TwoPhaseCommits.copyRemoteCommands(db);
        }
    }

    /**
     * A completed task whose scope then rolls back: the rollback marks it COMPENSATING and launches its compensation
     * ({@code RootCompensations}), the compensation's run commits, and the rollback settles the task COMPENSATED and
     * ends: three transactions write {@code external_task} and the worker (the completion, the rollback that marks
     * the task, the one that settles it), each in two phases with one worker prepared; nothing else.
     */
    @Test
    void a_completed_tasks_compensation_when_its_scope_rolls_back() throws Exception {
        Coop.client(db.dataSource());
        Topic<Empty> topic = Topic.of("citus-1pc-task-undo", Empty.class);
        Topic<Empty> refunds = Topic.of("citus-1pc-task-refund", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-1pc-task-undo")
                .step("ask", step -> step.openTask("citus-1pc-paid", new Empty(), TaskOptions.none()
                        .key("citus-1pc-undo/" + step.messageId().value()).compensation(refunds, new Empty())))
                .step("fails", step -> {
                    throw new IllegalStateException("roll the task back");
                })
                .build();
        Saga<Empty> refund = Saga.on(refunds, "citus-1pc-task-refund").step("refund", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).notifications(false)
                .pollInterval(Duration.ofMillis(50)).register(saga, refund).start();
                TwoPhaseCommits.Held held = TwoPhaseCommits.held(db)) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Empty());
            String key = "citus-1pc-undo/" + id.value();
            dev.coop.test.Await.until("task open", WAIT, () -> client.externalTask(key)
                    .filter(t -> t.state() == TaskState.OPEN).isPresent());
            long opened = TwoPhaseCommits.count(db);
            assertThat(client.complete(key, new Empty())).isEqualTo(TaskOutcome.SETTLED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            long after = TwoPhaseCommits.count(db);
            System.out.println("2PC rows of a completion, the failing step, the task's compensation and the rollback: "
                    + (after - opened));
            assertThat(client.externalTask(key).orElseThrow().state()).isEqualTo(TaskState.COMPENSATED);
            java.util.List<dev.coop.inspect.Event> events = client.events(id);
            dev.coop.test.Invariants.assertAll(events);
            assertThat(events.stream().filter(e -> "citus-1pc-task-refund".equals(e.saga())
                    && e.type() == dev.coop.inspect.EventType.COMMITTED).count())
                    .as(dev.coop.test.EventLog.table(events))
                    .isEqualTo(1);
            assertThat(TwoPhaseCommits.idsOf(db, id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
            assertThat(after - opened).as("two-phase commits, one per transaction writing a task").isEqualTo(3);
        }
    }

    /**
     * Three generations, each launching in its last step: the grandchild's advance commits the child, and the child's
     * commit, counted off at the root by a statement of its own ({@code AdvanceSql.countOffAloneOnCitus}), commits the
     * root. That count-off failed on Citus before ({@code commit_allowed} ran on the worker): it commits, in one phase.
     */
    @Test
    void a_cascade_of_commits_up_three_generations() throws Exception {
        Coop.client(db.dataSource());
        Topic<Empty> rootTopic = Topic.of("citus-1pc-cascade", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-1pc-cascade-child", Empty.class);
        Topic<Empty> grandchildTopic = Topic.of("citus-1pc-cascade-grandchild", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "citus-1pc-cascade")
                .step("launch", step -> step.launch(childTopic, new Empty())).build();
        Saga<Empty> child = Saga.on(childTopic, "citus-1pc-cascade-child")
                .step("launch", step -> step.launch(grandchildTopic, new Empty())).build();
        Saga<Empty> grandchild = Saga.on(grandchildTopic, "citus-1pc-cascade-grandchild").step("work", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).notifications(false)
                .pollInterval(Duration.ofMillis(50)).register(root, child, grandchild).start();
                TwoPhaseCommits.Held held = TwoPhaseCommits.held(db)) {
            long before = TwoPhaseCommits.count(db);
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            long after = TwoPhaseCommits.count(db);
            System.out.println("2PC rows of a cascade of commits up three generations: " + (after - before));
            java.util.List<dev.coop.inspect.Event> events = engine.client().events(id);
            dev.coop.test.Invariants.assertAll(events);
            assertThat(events.stream().filter(e -> e.type() == dev.coop.inspect.EventType.COMMITTED).count())
                    .as(dev.coop.test.EventLog.table(events)).isEqualTo(3);
            assertThat(TwoPhaseCommits.idsOf(db, id)).as("event ids").isSorted().allMatch(e -> e < 1L << 48);
            assertThat(after - before).as("two-phase commits").isZero();
        }
    }
}
