package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.Failure;
import dev.coop.failure.ParentSaidSoException;
import dev.coop.failure.RollbackRequestedException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.StepGate;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Undo: {@code client.rollback} rolls back a committed hierarchy, or only a subtree, children first, with the same
 * events as any rollback. Refused while anything in the scope or above it runs, and when already rolled back.
 */
class UndoTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final Duration PROMPT = Duration.ofSeconds(3);

    record Order(String name) {
    }

    record Child(String name) {
    }

    /** Root r0 launches children a and b, then r1; each child c0 launches a grandchild, then c1. */
    static final class Tree {
        final Topic<Order> rootTopic;
        final Topic<Child> childTopic;
        final Topic<Child> grandchildTopic;
        final List<String> compensations = new CopyOnWriteArrayList<>();
        final Map<String, Lineage> childLineages = new ConcurrentHashMap<>();
        final Map<String, MessageId> childMessages = new ConcurrentHashMap<>();
        final Map<String, CooperationException> causes = new ConcurrentHashMap<>();
        final Saga<Order> root;
        final Saga<Child> child;
        final Saga<Child> grandchild;

        Tree(String prefix) {
            rootTopic = Topic.of(prefix + "-root", Order.class);
            childTopic = Topic.of(prefix + "-child", Child.class);
            grandchildTopic = Topic.of(prefix + "-grandchild", Child.class);
            root = Saga.on(rootTopic, prefix + "-root-saga")
                    .step("r0", step -> {
                        step.launch(childTopic, new Child("a"));
                        step.launch(childTopic, new Child("b"));
                    })
                    .compensateWith((step, cause) -> {
                        compensations.add("root:r0");
                        causes.put("root", cause);
                    })
                    .step("r1", step -> {
                    })
                    .compensateWith((step, cause) -> compensations.add("root:r1"))
                    .build();
            child = Saga.on(childTopic, prefix + "-child-saga")
                    .step("c0", step -> {
                        childLineages.put(step.payload().name(), step.lineage());
                        childMessages.put(step.payload().name(), step.messageId());
                        step.launch(grandchildTopic, new Child(step.payload().name()));
                    })
                    .compensateWith((step, cause) -> {
                        compensations.add("child-" + step.payload().name() + ":c0");
                        causes.put("child-" + step.payload().name(), cause);
                    })
                    .step("c1", step -> {
                    })
                    .compensateWith((step, cause) -> compensations.add("child-" + step.payload().name() + ":c1"))
                    .build();
            grandchild = Saga.on(grandchildTopic, prefix + "-grandchild-saga")
                    .step("g0", step -> {
                    })
                    .compensateWith((step, cause) -> compensations.add("grandchild-" + step.payload().name() + ":g0"))
                    .build();
        }

        List<String> childOrder(String name) {
            return compensations.stream().filter(c -> c.contains("-" + name + ":")).toList();
        }
    }

    @Test
    void undoing_a_whole_hierarchy_rolls_back_every_run_children_first(DataSource dataSource) {
        Tree tree = new Tree("undo-all");
        try (CoopEngine engine = Coop.engine(dataSource).register(tree.root, tree.child, tree.grandchild).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(tree.rootTopic, new Order("42"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            int committedEvents = client.events(id).size();
            assertThat(tree.compensations).isEmpty();

            client.rollback(id, "order 42 was a mistake");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = client.events(id);
            String log = EventLog.table(events);

            assertThat(tree.compensations).as(log).hasSize(2 + 2 * 2 + 2);
            assertThat(tree.compensations.getFirst()).isEqualTo("root:r1");
            assertThat(tree.compensations.getLast()).isEqualTo("root:r0");
            for (String name : List.of("a", "b")) {
                assertThat(tree.childOrder(name)).as(log)
                        .containsExactly("child-" + name + ":c1", "grandchild-" + name + ":g0",
                                "child-" + name + ":c0");
            }
            List<Event> undo = events.subList(committedEvents, events.size());
            assertThat(EventLog.row(undo.get(0))).as(log).isEqualTo("ROLLBACK_EMITTED - -");
            assertThat(undo.get(0).messageId()).isEqualTo(id);
            Failure request = Failure.fromJson(undo.get(0).exception());
            assertThat(request.type()).isEqualTo(RollbackRequestedException.TYPE);
            assertThat(request.message()).isEqualTo("order 42 was a mistake");
            assertThat(request.source()).isEqualTo("coop-client");
            assertThat(EventLog.row(undo.get(1))).as(log).isEqualTo("ROLLING_BACK undo-all-root-saga -");
            assertThat(Failure.fromJson(undo.get(1).exception())).isEqualTo(request);
            assertThat(EventLog.rows(undo)).as(log).containsSubsequence(
                    "SUSPENDED undo-all-root-saga Rollback of r1 (rolling back child scopes)",
                    "SUSPENDED undo-all-root-saga Rollback of r1",
                    "ROLLBACK_EMITTED undo-all-root-saga Rollback of r0 (rolling back child scopes)",
                    "ROLLBACK_EMITTED undo-all-root-saga Rollback of r0 (rolling back child scopes)",
                    "SUSPENDED undo-all-root-saga Rollback of r0 (rolling back child scopes)",
                    "ROLLING_BACK undo-all-child-saga -");
            assertThat(EventLog.rows(undo)).as(log).endsWith(
                    "SUSPENDED undo-all-root-saga Rollback of r0",
                    "ROLLED_BACK undo-all-root-saga Rollback of r0");
            assertThat(EventLog.rows(undo).stream().filter(r -> r.startsWith("ROLLED_BACK")).count()).isEqualTo(5);
            for (Event e : undo) {
                if (e.type() == EventType.ROLLING_BACK && e.lineage().depth() > 2) {
                    Failure f = Failure.fromJson(e.exception());
                    assertThat(f.type()).isEqualTo(ParentSaidSoException.TYPE);
                    assertThat(CompensationTest.rootMessage(f)).isEqualTo("order 42 was a mistake");
                }
            }
            assertThat(tree.causes.get("root")).isInstanceOf(RollbackRequestedException.class);
            assertThat(tree.causes.get("child-a")).isInstanceOf(ParentSaidSoException.class)
                    .cause().isInstanceOf(RollbackRequestedException.class);
        }
    }

    /**
     * An engine's transaction may hold a finished run's lock for a moment (a claim that found the run no longer
     * runnable keeps the lock it took until its round commits): a rollback waits for it instead of calling the run
     * busy.
     */
    @Test
    void a_rollback_waits_for_a_transaction_that_still_holds_a_finished_runs_lock(DataSource dataSource)
            throws Exception {
        Tree tree = new Tree("undo-lock");
        try (CoopEngine engine = Coop.engine(dataSource).register(tree.root, tree.child, tree.grandchild).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(tree.rootTopic, new Order("9"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            Lineage a = tree.childLineages.get("a");
            try (java.sql.Connection holder = dataSource.getConnection()) {
                holder.setAutoCommit(false);
                try (java.sql.PreparedStatement ps = holder.prepareStatement(
                        "SELECT 1 FROM coop.run WHERE id = ? FOR UPDATE")) {
                    ps.setObject(1, a.last());
                    ps.executeQuery().close();
                }
                CompletableFuture<Void> rollback = CompletableFuture.runAsync(() -> client.rollback(a, "only a"));
                dev.coop.test.Await.until("the rollback waits for the run's lock", WAIT,
                        () -> lockWaiters(dataSource) == 1);
                holder.commit();
                rollback.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            }
            assertThat(client.awaitCompletion(tree.childMessages.get("a"), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        }
    }

    static int lockWaiters(DataSource dataSource) {
        try (java.sql.Connection c = dataSource.getConnection();
                java.sql.Statement st = c.createStatement();
                java.sql.ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_stat_activity"
                        + " WHERE wait_event_type = 'Lock' AND query LIKE '%FROM coop.run WHERE id = $1 FOR UPDATE'")) {
            rs.next();
            return rs.getInt(1);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void undoing_a_subtree_rolls_back_only_that_run_and_its_children_and_a_later_undo_of_the_rest_skips_it(
            DataSource dataSource) {
        Tree tree = new Tree("undo-sub");
        try (CoopEngine engine = Coop.engine(dataSource).register(tree.root, tree.child, tree.grandchild).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(tree.rootTopic, new Order("7"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            client.rollback(tree.childLineages.get("a"), "only a");
            MessageId a = tree.childMessages.get("a");
            assertThat(client.awaitCompletion(a, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            String log = EventLog.table(client.events(id));
            assertThat(tree.compensations).as(log).containsExactly("child-a:c1", "grandchild-a:g0", "child-a:c0");
            assertThat(client.statuses(id)).containsExactly(RunStatus.COMMITTED);
            assertThat(client.statuses(tree.childMessages.get("b"))).containsExactly(RunStatus.COMMITTED);
            Event request = CompensationTest.find(client.events(id), e -> e.type() == EventType.ROLLBACK_EMITTED);
            assertThat(request.messageId()).isEqualTo(a);
            assertThat(request.lineage()).isEqualTo(tree.childLineages.get("a"));
            assertThat(Failure.fromJson(request.exception()).type()).isEqualTo(RollbackRequestedException.TYPE);
            assertThat(tree.causes.get("child-a")).isInstanceOf(RollbackRequestedException.class);

            assertThatThrownBy(() -> client.rollback(tree.childLineages.get("a"), "again"))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("already rolled back");

            tree.compensations.clear();
            client.rollback(id, "now the rest");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            log = EventLog.table(client.events(id));
            assertThat(tree.compensations).as(log).containsExactly("root:r1", "child-b:c1", "grandchild-b:g0",
                    "child-b:c0", "root:r0");
            assertThat(client.statuses(a)).containsExactly(RunStatus.ROLLED_BACK);
        }
    }

    @Test
    void undo_is_refused_promptly_while_a_child_step_of_the_scope_runs(DataSource dataSource) throws Exception {
        Topic<Child> rootTopic = Topic.of("undo-busy-child-root", Child.class);
        Topic<Child> childTopic = Topic.of("undo-busy-child-child", Child.class);
        StepGate gate = new StepGate(Duration.ofSeconds(20));
        Map<String, Lineage> lineages = new ConcurrentHashMap<>();
        Saga<Child> root = Saga.on(rootTopic, "undo-busy-child-root-saga")
                .step("r0", step -> step.launch(childTopic, new Child("c")))
                .build();
        Saga<Child> child = Saga.on(childTopic, "undo-busy-child-child-saga")
                .step("c0", step -> {
                    lineages.put("child", step.lineage());
                    gate.pass();
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Child("root"));
            gate.awaitArrivals(1, WAIT);

            // the root waits for its child: refused, it is still running
            assertThat(refusal(() -> client.rollback(id, "too early"), gate)).hasMessageContaining("still running");
            // the child's own step is running: refused as well, without waiting for the step to end
            assertThat(refusal(() -> client.rollback(lineages.get("child"), "too early"), gate))
                    .isInstanceOf(CoopValidationException.class);

            gate.open();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.events(id)).noneMatch(e -> e.type() == EventType.ROLLBACK_EMITTED
                    || e.type() == EventType.ROLLING_BACK);
        } finally {
            gate.open();
        }
    }

    @Test
    void undo_of_a_finished_subtree_is_refused_promptly_while_its_parent_still_runs(DataSource dataSource)
            throws Exception {
        Topic<Child> rootTopic = Topic.of("undo-busy-root-root", Child.class);
        Topic<Child> childTopic = Topic.of("undo-busy-root-child", Child.class);
        StepGate gate = new StepGate(Duration.ofSeconds(20));
        Map<String, Lineage> lineages = new ConcurrentHashMap<>();
        Map<String, MessageId> messages = new ConcurrentHashMap<>();
        Saga<Child> root = Saga.on(rootTopic, "undo-busy-root-root-saga")
                .step("r0", step -> step.launch(childTopic, new Child("c")))
                .step("r1", step -> gate.pass())
                .build();
        Saga<Child> child = Saga.on(childTopic, "undo-busy-root-child-saga")
                .step("c0", step -> {
                    lineages.put("child", step.lineage());
                    messages.put("child", step.messageId());
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Child("root"));
            gate.awaitArrivals(1, WAIT);
            assertThat(client.statuses(messages.get("child"))).containsExactly(RunStatus.COMMITTED);

            assertThat(refusal(() -> client.rollback(lineages.get("child"), "parent still running"), gate))
                    .hasMessageContaining("still running");
            assertThat(refusal(() -> client.rollback(id, "still running"), gate))
                    .isInstanceOf(CoopValidationException.class);

            gate.open();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.statuses(messages.get("child"))).containsExactly(RunStatus.COMMITTED);
        } finally {
            gate.open();
        }
    }

    @Test
    void undoing_twice_is_refused_both_while_the_first_undo_runs_and_after_it_finished(DataSource dataSource) {
        Tree tree = new Tree("undo-twice");
        try (CoopEngine engine = Coop.engine(dataSource).register(tree.root, tree.child, tree.grandchild).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(tree.rootTopic, new Order("1"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            client.rollback(id, "first");
            // the first undo may still run or be done already: either way the second is refused, nothing crashes
            assertThatThrownBy(() -> client.rollback(id, "second")).isInstanceOf(CoopValidationException.class);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThatThrownBy(() -> client.rollback(id, "third")).isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("already rolled back");
            assertThat(tree.compensations).hasSize(8);
            assertThat(client.events(id).stream().filter(e -> e.type() == EventType.ROLLBACK_EMITTED
                    && e.saga() == null)).hasSize(1);
        }
    }

    @Test
    void undo_of_a_hierarchy_that_rolled_back_on_its_own_is_refused(DataSource dataSource) {
        Topic<Child> topic = Topic.of("undo-failed", Child.class);
        Saga<Child> saga = Saga.on(topic, "undo-failed-saga")
                .step("s0", step -> {
                    throw new IllegalStateException("no");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(topic, new Child("x"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThatThrownBy(() -> client.rollback(id, "undo")).isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("already rolled back");
            assertThatThrownBy(() -> client.rollback(new MessageId(UUID.randomUUID()), "undo"))
                    .isInstanceOf(CoopValidationException.class);
            assertThatThrownBy(() -> client.rollback(id, "")).isInstanceOf(CoopValidationException.class);
        }
    }

    /** Runs a client request that must be refused, and must be refused without waiting for running steps. */
    static Throwable refusal(Runnable request, StepGate heldStep) throws Exception {
        CompletableFuture<Void> f = CompletableFuture.runAsync(request);
        try {
            f.get(PROMPT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (TimeoutException e) {
            heldStep.open();
            String then;
            try {
                f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                then = "accepted";
            } catch (ExecutionException late) {
                then = late.getCause().toString();
            }
            throw new AssertionError("the request did not return within " + PROMPT
                    + " while a step of the scope was held: it waited for that step to end; once the step was"
                    + " let go the request returned: " + then, e);
        }
        throw new AssertionError("the request was accepted, but it should have been refused");
    }
}
