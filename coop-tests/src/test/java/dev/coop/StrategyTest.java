package dev.coop;

import dev.coop.failure.Failure;
import dev.coop.failure.GaveUpException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.ParkedRun;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.StepGate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class StrategyTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    /** Registers a saga in the topology and leaves no engine running it: its service is "down". */
    private static void registerWithoutRunning(DataSource dataSource, Saga<?> saga) {
        Coop.engine(dataSource).name("gone").register(saga).start().close();
    }

    /**
     * A run its parent stopped awaiting (not started when the strategy said to go on) starts later, and its last
     * step's child commits it (cascading completion): it is not counted off at that parent, which by then waits for
     * the children of a later step and must go on waiting for them.
     */
    @Test
    void a_run_its_parent_stopped_awaiting_is_not_counted_off_when_its_child_commits_it(DataSource dataSource)
            throws Exception {
        Topic<Empty> rootTopic = Topic.of("detached-cascade-root", Empty.class);
        Topic<Empty> detachedTopic = Topic.of("detached-cascade-detached", Empty.class);
        Topic<Empty> grandchildTopic = Topic.of("detached-cascade-grandchild", Empty.class);
        Topic<Empty> awaitedTopic = Topic.of("detached-cascade-awaited", Empty.class);
        java.util.concurrent.atomic.AtomicBoolean detachOnce = new java.util.concurrent.atomic.AtomicBoolean(true);
        CooperationStrategy goOnWithoutTheFirstChildren = new CooperationStrategy() {
            @Override
            public BarrierDecision resumeHappyPath(Barrier barrier) {
                return barrier.notStarted() > 0 && detachOnce.getAndSet(false)
                        ? BarrierDecision.STOP_WAITING_FOR_UNSTARTED
                        : BarrierDecision.WAIT;
            }
        };
        java.util.concurrent.atomic.AtomicReference<MessageId> detached = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicBoolean awaitedDone = new java.util.concurrent.atomic.AtomicBoolean();
        List<String> ran = new CopyOnWriteArrayList<>();
        StepGate awaitedGate = new StepGate();
        StepGate detachedGate = new StepGate();
        Saga<Empty> root = Saga.on(rootTopic, "detached-cascade-root-saga")
                .strategy(goOnWithoutTheFirstChildren)
                .step("s1", step -> detached.set(step.launch(detachedTopic, new Empty())))
                .step("s2", step -> step.launch(awaitedTopic, new Empty()))
                .step("s3", step -> ran.add("s3 after the awaited child finished: " + awaitedDone.get()))
                .build();
        Saga<Empty> detachedSaga = Saga.on(detachedTopic, "detached-cascade-detached-saga")
                .step("d0", step -> {
                    detachedGate.pass(); // starts once the root waits for its s2 child
                    step.launch(grandchildTopic, new Empty());
                })
                .build();
        Saga<Empty> grandchild = Saga.on(grandchildTopic, "detached-cascade-grandchild-saga")
                .step("g0", step -> ran.add("grandchild"))
                .build();
        Saga<Empty> awaited = Saga.on(awaitedTopic, "detached-cascade-awaited-saga")
                .step("a0", step -> {
                    awaitedGate.pass();
                    awaitedDone.set(true);
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4)
                .register(root, detachedSaga, grandchild, awaited).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Empty());
            awaitedGate.awaitArrivals(1, WAIT); // the root waits in s2 for its child, which holds here
            detachedGate.open();
            assertThat(client.awaitCompletion(Await.value("the detached run's message", WAIT, detached::get), WAIT))
                    .isEqualTo(Outcome.COMMITTED); // committed by its grandchild's commit
            try (java.sql.Connection c = dataSource.getConnection();
                    java.sql.PreparedStatement ps = c.prepareStatement(
                            "SELECT status, pending_children FROM coop.run WHERE message_id = ?")) {
                ps.setObject(1, id.value());
                try (java.sql.ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1) + " " + rs.getInt(2)).as("the root still waits for its s2 child")
                            .isEqualTo("WAITING 1");
                }
            }
            awaitedGate.open();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ran).contains("grandchild", "s3 after the awaited child finished: true");
        }
    }

    @Test
    void a_parent_whose_strategy_set_a_barrier_timer_gives_up_when_cancelled_and_its_unstarted_child_never_runs(
            DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("timer-cancel-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("timer-cancel-child", Empty.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        CooperationStrategy askAgainInAnHour = new CooperationStrategy() {
            @Override
            public BarrierDecision resumeHappyPath(Barrier barrier) {
                return BarrierDecision.waitUntil(barrier.run().now().plus(Duration.ofHours(1)));
            }
        };
        Saga<Empty> root = Saga.on(rootTopic, "timer-cancel-root-handler")
                .strategy(askAgainInAnHour)
                .step("0", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> ran.add("compensated root:0"))
                .step("1", step -> ran.add("1 (must not run)"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "timer-cancel-child-handler")
                .step("c0", step -> ran.add("child ran"))
                .build();
        registerWithoutRunning(dataSource, child);
        MessageId id;
        try (CoopEngine engineA = Coop.engine(dataSource).register(root).start()) {
            CoopClient client = engineA.client();
            id = client.launch(rootTopic, new Empty());
            Await.until("the root to wait with its barrier timer set", WAIT,
                    () -> client.events(id).stream().anyMatch(e -> e.type() == EventType.SUSPENDED));
            assertThat(client.cancel(id, "never mind")).isEqualTo(CancelResult.REQUESTED);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(ran).containsExactly("compensated root:0");
        }
        try (CoopEngine engineB = Coop.engine(dataSource).register(child).start()) {
            MessageId later = engineB.client().launch(childTopic, new Empty());
            assertThat(engineB.client().awaitCompletion(later, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ran).containsExactly("compensated root:0", "child ran");
        }
    }

    /**
     * A run on the rollback path waits for its children's compensations with a barrier timer its strategy set; when
     * the timer fires, the barrier re-check sends it back to waiting and, as every advance on the rollback path, keeps
     * its rollback cause as its {@code failure}.
     */
    @Test
    void a_barrier_recheck_on_the_rollback_path_keeps_the_rollback_cause_as_the_runs_failure(DataSource dataSource)
            throws Exception {
        Topic<Empty> rootTopic = Topic.of("recheck-rollback-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("recheck-rollback-child", Empty.class);
        java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
        CooperationStrategy askAgainOnce = new CooperationStrategy() {
            @Override
            public BarrierDecision resumeRollbackPath(Barrier barrier) {
                return asked.incrementAndGet() == 1
                        ? BarrierDecision.waitUntil(barrier.run().now().plusMillis(100))
                        : BarrierDecision.WAIT;
            }
        };
        StepGate compensation = new StepGate();
        Saga<Empty> root = Saga.on(rootTopic, "recheck-rollback-root-saga")
                .strategy(askAgainOnce)
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("fail", step -> {
                    throw new IllegalStateException("the root fails after its child committed");
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "recheck-rollback-child-saga")
                .step("work", step -> {
                })
                .compensateWith((step, cause) -> compensation.pass())
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Empty());
            compensation.awaitArrivals(1, WAIT); // the child's compensation holds here until opened
            Await.until("the root to be asked again when its timer fired, and to wait", WAIT,
                    () -> rootRow(dataSource, id).startsWith("WAITING ROLLBACK 1 "));
            assertThat(asked.get()).isEqualTo(2);
            assertThat(rootRow(dataSource, id)).as("the root's failure while it waits after the re-check")
                    .isEqualTo("WAITING ROLLBACK 1 the root fails after its child committed (its rollback cause)");
            compensation.open();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        }
    }

    /** The root run's status, phase, pending children and failure message, and whether that is its rollback cause. */
    private static String rootRow(DataSource dataSource, MessageId id) {
        try (java.sql.Connection c = dataSource.getConnection();
                java.sql.PreparedStatement ps = c.prepareStatement("SELECT status || ' ' || phase || ' '"
                        + " || pending_children || ' ' || coalesce(failure->>'message', 'null') || CASE WHEN failure"
                        + " = rollback_cause THEN ' (its rollback cause)' ELSE '' END FROM coop.run"
                        + " WHERE message_id = ?")) {
            ps.setObject(1, id.value());
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : "none";
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void the_time_window_strategy_waits_only_for_children_that_start_within_the_window(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("window-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("window-child", Empty.class);
        List<String> trace = new CopyOnWriteArrayList<>();
        StepGate fastChild = new StepGate();
        Saga<Empty> root = Saga.on(rootTopic, "window-root-handler")
                .strategy(Strategies.timeWindow(Duration.ofMillis(1500))) // ample for the fast child to start
                .step("emit", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> trace.add("root resumed"))
                .build();
        Saga<Empty> fast = Saga.on(childTopic, "window-fast-handler")
                .step("work", step -> {
                    fastChild.pass(); // started within the window, finishes after it
                    trace.add("fast child done");
                })
                .build();
        Saga<Empty> down = Saga.on(childTopic, "window-down-handler")
                .step("work", step -> trace.add("late child ran"))
                .build();
        registerWithoutRunning(dataSource, down);
        try (CoopEngine engine = Coop.engine(dataSource).register(root, fast).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            fastChild.awaitArrivals(1, WAIT);
            // the window ends while the fast child is still running: the root keeps waiting for it, not the other
            Await.until("the root to stop waiting for the child that never started", WAIT,
                    () -> engine.client().tree(id).toString().contains("WAITING"));
            assertThat(trace).isEmpty();
            fastChild.open();
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(trace).containsExactly("fast child done", "root resumed");
        }
        // the late child still runs when its service comes back; the root, long done, is not affected
        try (CoopEngine late = Coop.engine(dataSource).register(down).start()) {
            Await.until("the late child to run", WAIT, () -> trace.contains("late child ran"));
        }
    }

    @Test
    void a_custom_strategy_gives_up_and_times_the_barrier(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("custom-strategy", Empty.class);
        Topic<Empty> childTopic = Topic.of("custom-strategy-child", Empty.class);
        ContextKey<Boolean> killSwitch = ContextKey.of("kill-switch", Boolean.class);
        List<String> barrierCalls = new CopyOnWriteArrayList<>();
        CooperationStrategy strategy = new CooperationStrategy() {
            @Override
            public Optional<Failure> giveUpOnHappyPath(RunFacts run) {
                // the switch is read once the barrier was asked twice (give-up rules are asked while waiting, too)
                if ("dangerous".equals(run.nextStep()) && barrierCalls.size() >= 2
                        && run.context().get(killSwitch).orElse(false)) {
                    return Optional.of(new Failure("the kill switch is on", "example.KillSwitch", run.saga(),
                            List.of(), List.of()));
                }
                return CooperationStrategy.super.giveUpOnHappyPath(run);
            }

            @Override
            public BarrierDecision resumeHappyPath(Barrier barrier) {
                barrierCalls.add("pending " + barrier.pending());
                return barrierCalls.size() == 1
                        ? BarrierDecision.waitUntil(barrier.run().now().plusMillis(200))
                        : BarrierDecision.WAIT;
            }
        };
        StepGate child = new StepGate();
        Saga<Empty> saga = Saga.on(topic, "custom-strategy-handler")
                .step("safe", step -> step.launch(childTopic, new Empty()))
                .step("dangerous", step -> {
                })
                .build();
        Saga<Empty> childSaga = Saga.on(childTopic, "custom-strategy-child-handler")
                .step("slow", step -> child.pass())
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).strategy(strategy).register(saga, childSaga).start()) {
            MessageId id = engine.client().launch(topic, new Empty(), CooperationContext.of(killSwitch, true));
            child.awaitArrivals(1, WAIT);
            Await.until("the barrier to be asked again after 200 ms", WAIT, () -> barrierCalls.size() == 2);
            child.open();
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(barrierCalls).containsExactly("pending 1", "pending 1");
            Event rollingBack = engine.client().events(id).stream()
                    .filter(e -> e.type() == EventType.ROLLING_BACK && "custom-strategy-handler".equals(e.saga()))
                    .findFirst().orElseThrow();
            Failure failure = Failure.fromJson(rollingBack.exception());
            assertThat(failure.type()).isEqualTo(GaveUpException.TYPE);
            assertThat(failure.causes().getFirst().message()).isEqualTo("the kill switch is on");

            MessageId off = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(off, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void the_cut_off_start_rule_ignores_old_hierarchies_without_stranding_those_in_flight(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("cutoff-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("cutoff-child", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "cutoff-root-handler")
                .step("emit", step -> step.launch(childTopic, new Empty()))
                .step("after", step -> {
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "cutoff-child-handler").step("work", step -> {
        }).build();
        registerWithoutRunning(dataSource, child);
        CoopClient client = Coop.client(dataSource);
        MessageId inFlight;
        try (CoopEngine before = Coop.engine(dataSource).register(root).start()) {
            inFlight = client.launch(rootTopic, new Empty());
            Await.until("the in-flight root to wait for its child", WAIT,
                    () -> client.statuses(inFlight).contains(RunStatus.WAITING));
        }
        MessageId backlog = client.launch(rootTopic, new Empty()); // launched while no engine ran: the backlog
        Instant cutoff = client.now();
        MessageId fresh = client.launch(rootTopic, new Empty());
        CooperationStrategy rule = Strategies.ignoringHierarchiesOlderThan(cutoff, Strategies.standard());
        try (CoopEngine after = Coop.engine(dataSource).strategy(rule).register(root, child).start()) {
            assertThat(client.awaitCompletion(fresh, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(inFlight, WAIT)).isEqualTo(Outcome.COMMITTED); // its child started
            Await.until("the backlog to be parked", WAIT,
                    () -> client.statuses(backlog).contains(RunStatus.PARKED));
            ParkedRun parked = client.parkedRuns(10).stream().filter(p -> p.messageId().equals(backlog))
                    .findFirst().orElseThrow();
            assertThat(parked.failure().message()).contains("before the cut-off " + cutoff);
        }
    }
}
