package dev.coop;

import dev.coop.failure.ChildRollbackFailedException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.Failure;
import dev.coop.failure.ParentSaidSoException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Compensation: a failure runs the saga backwards, children first (recursively), each step's compensation newest first
 * in its own transaction; a compensation that throws ends the run ROLLBACK_FAILED and that failure travels up.
 */
class CompensationTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Node(String path) {
    }

    @Test
    void a_failure_three_levels_deep_rolls_back_every_child_before_its_parent_and_each_run_newest_step_first(
            DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("comp3-root", Empty.class);
        Topic<Node> childTopic = Topic.of("comp3-child", Node.class);
        Topic<Node> grandchildTopic = Topic.of("comp3-grandchild", Node.class);
        List<String> compensations = new CopyOnWriteArrayList<>();
        Map<String, CooperationException> causes = new ConcurrentHashMap<>();
        Saga<Empty> root = Saga.on(rootTopic, "comp3-root-saga")
                .step("r0", step -> {
                })
                .compensateWith((step, cause) -> {
                    compensations.add("root:r0");
                    causes.put("root:r0", cause);
                })
                .step("r1", step -> {
                    step.launch(childTopic, new Node("0"));
                    step.launch(childTopic, new Node("1"));
                })
                .compensateWith((step, cause) -> compensations.add("root:r1"))
                .step("r2", step -> {
                    throw new IllegalStateException("root fails in r2");
                })
                .compensateWith((step, cause) -> compensations.add("root:r2 (must not run)"))
                .build();
        Saga<Node> child = Saga.on(childTopic, "comp3-child-saga")
                .step("c0", step -> {
                })
                .compensateWith((step, cause) -> compensations.add("child-" + step.payload().path() + ":c0"))
                .step("c1", step -> {
                    step.launch(grandchildTopic, new Node(step.payload().path() + ".0"));
                    step.launch(grandchildTopic, new Node(step.payload().path() + ".1"));
                })
                .compensateWith((step, cause) -> {
                    compensations.add("child-" + step.payload().path() + ":c1");
                    causes.put("child-" + step.payload().path(), cause);
                })
                .build();
        Saga<Node> grandchild = Saga.on(grandchildTopic, "comp3-grandchild-saga")
                .step("g0", step -> {
                })
                .compensateWith((step, cause) -> compensations.add("grandchild-" + step.payload().path() + ":g0"))
                .step("g1", step -> {
                })
                .compensateWith((step, cause) -> {
                    compensations.add("grandchild-" + step.payload().path() + ":g1");
                    causes.put("grandchild-" + step.payload().path(), cause);
                })
                .build();

        List<Event> events;
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child, grandchild).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            events = engine.client().events(id);
        }
        String table = EventLog.table(events);

        // every compensation ran exactly once, the failing step's never
        assertThat(compensations).as(table).hasSize(2 + 2 * 2 + 4 * 2).doesNotContain("root:r2 (must not run)");
        // newest step first inside each run
        for (String c : List.of("0", "1")) {
            assertBefore(compensations, "child-" + c + ":c1", "child-" + c + ":c0");
            for (String g : List.of(c + ".0", c + ".1")) {
                assertBefore(compensations, "grandchild-" + g + ":g1", "grandchild-" + g + ":g0");
                // children of c1 before c1's own compensation
                assertBefore(compensations, "grandchild-" + g + ":g0", "child-" + c + ":c1");
            }
            assertBefore(compensations, "child-" + c + ":c0", "root:r1");
        }
        assertBefore(compensations, "root:r1", "root:r0");

        // the log agrees: each child's ROLLED_BACK precedes its parent's compensation of the launching step
        List<Event> rolledBack = events.stream().filter(e -> e.type() == EventType.ROLLED_BACK).toList();
        assertThat(rolledBack).as(table).hasSize(1 + 2 + 4);
        for (Event done : rolledBack) {
            if (done.lineage().depth() == 2) {
                continue; // the root
            }
            Event emitted = find(events, e -> e.type() == EventType.EMITTED && e.messageId().equals(done.messageId()));
            List<java.util.UUID> parentLineage = done.lineage().ids().subList(0, done.lineage().depth() - 1);
            int parentCompensation = indexOf(events, e -> e.type() == EventType.SUSPENDED
                    && e.lineage().ids().equals(parentLineage)
                    && ("Rollback of " + emitted.step()).equals(e.step()));
            assertThat(parentCompensation).as("compensation of %s by %s in\n%s", emitted.step(), emitted.saga(), table)
                    .isGreaterThan(events.indexOf(done));
            int parentAskedChildren = indexOf(events, e -> e.type() == EventType.ROLLBACK_EMITTED
                    && e.messageId().equals(done.messageId()));
            assertThat(parentAskedChildren).as(table).isLessThan(events.indexOf(done));
        }
        // the root recorded what failed; its children learnt it from their parent
        Event rootRollingBack = find(events, e -> e.type() == EventType.ROLLING_BACK && e.lineage().depth() == 2);
        assertThat(rootRollingBack.step()).isEqualTo("r2");
        assertThat(Failure.fromJson(rootRollingBack.exception()).message()).isEqualTo("root fails in r2");
        for (Event e : events) {
            if (e.type() == EventType.ROLLING_BACK && e.lineage().depth() > 2) {
                Failure f = Failure.fromJson(e.exception());
                assertThat(f.type()).as(table).isEqualTo(ParentSaidSoException.TYPE);
                assertThat(e.step()).isNull();
                assertThat(rootMessage(f)).isEqualTo("root fails in r2");
            }
        }
        // compensations receive the failure that triggered the rollback
        assertThat(causes.get("root:r0").reason()).isEqualTo("root fails in r2");
        assertThat(causes.get("child-0")).isInstanceOf(ParentSaidSoException.class);
        assertThat(rootMessage(causes.get("grandchild-1.0").failure())).isEqualTo("root fails in r2");
        assertThat(causes.get("grandchild-1.0")).isInstanceOf(ParentSaidSoException.class)
                .cause().isInstanceOf(ParentSaidSoException.class);
    }

    @Test
    void a_committed_child_rolls_back_its_whole_history_when_its_parent_fails_later(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("later-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("later-child", Empty.class);
        List<String> compensations = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "later-root-saga")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> compensations.add("root:r0"))
                .step("r1", step -> {
                    throw new RuntimeException("Geronimo!");
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "later-child-saga")
                .step("c0", step -> {
                })
                .compensateWith((step, cause) -> compensations.add("child:c0"))
                .step("c1", step -> {
                })
                .compensateWith((step, cause) -> compensations.add("child:c1"))
                .build();

        List<Event> events;
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            events = engine.client().events(id);
        }

        assertThat(EventLog.rows(events)).as(EventLog.table(events)).containsExactly(
                "EMITTED - -",
                "SEEN later-root-saga -",
                "EMITTED later-root-saga r0",
                "SUSPENDED later-root-saga r0",
                "SEEN later-child-saga -",
                "SUSPENDED later-child-saga c0",
                "SUSPENDED later-child-saga c1",
                "COMMITTED later-child-saga c1",
                "ROLLING_BACK later-root-saga r1",
                "ROLLBACK_EMITTED later-root-saga Rollback of r0 (rolling back child scopes)",
                "SUSPENDED later-root-saga Rollback of r0 (rolling back child scopes)",
                "ROLLING_BACK later-child-saga -",
                "SUSPENDED later-child-saga Rollback of c1 (rolling back child scopes)",
                "SUSPENDED later-child-saga Rollback of c1",
                "SUSPENDED later-child-saga Rollback of c0 (rolling back child scopes)",
                "SUSPENDED later-child-saga Rollback of c0",
                "ROLLED_BACK later-child-saga Rollback of c0",
                "SUSPENDED later-root-saga Rollback of r0",
                "ROLLED_BACK later-root-saga Rollback of r0");
        assertThat(compensations).containsExactly("child:c1", "child:c0", "root:r0");
        Failure childCause = Failure.fromJson(events.get(11).exception());
        assertThat(childCause.type()).isEqualTo(ParentSaidSoException.TYPE);
        assertThat(childCause.source()).startsWith("later-root-saga[");
        assertThat(childCause.causes()).extracting(Failure::message).containsExactly("Geronimo!");
        assertThat(events.get(9).exception()).isNotNull();
        assertThat(Failure.fromJson(events.get(9).exception())).isEqualTo(childCause);
    }

    @Test
    void a_compensation_that_fails_three_levels_deep_ends_every_ancestor_rollback_failed_with_all_causes(
            DataSource dataSource) throws SQLException {
        String table = createTable(dataSource, "comp_fail_writes");
        Topic<Empty> rootTopic = Topic.of("compfail-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("compfail-child", Empty.class);
        Topic<Node> grandchildTopic = Topic.of("compfail-grandchild", Node.class);
        List<String> compensations = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "compfail-root-saga")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> compensations.add("root:r0"))
                .step("r1", step -> {
                    throw new RuntimeException("root fails");
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "compfail-child-saga")
                .step("c0", step -> {
                    step.launch(grandchildTopic, new Node("a"));
                    step.launch(grandchildTopic, new Node("b"));
                })
                .compensateWith((step, cause) -> compensations.add("child:c0"))
                .build();
        Saga<Node> grandchild = Saga.on(grandchildTopic, "compfail-grandchild-saga")
                .step("g0", step -> {
                })
                .compensateWith((step, cause) -> {
                    insert(step.connection(), table, "compensation of " + step.payload().path());
                    compensations.add("grandchild-" + step.payload().path() + ":g0");
                    throw new IllegalStateException("cannot undo " + step.payload().path());
                })
                .build();

        List<Event> events;
        MessageId id;
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child, grandchild).start()) {
            id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLBACK_FAILED);
            events = engine.client().events(id);
        }
        String log = EventLog.table(events);

        // the failing compensations ran (their writes rolled back with them); nothing above them was compensated
        assertThat(compensations).as(log).containsExactlyInAnyOrder("grandchild-a:g0", "grandchild-b:g0");
        assertThat(rows(dataSource, table)).isEmpty();

        assertThat(EventLog.rows(events).stream().filter(r -> r.startsWith("ROLLBACK_FAILED")).toList()).as(log)
                .containsExactlyInAnyOrder(
                        "ROLLBACK_FAILED compfail-grandchild-saga Rollback of g0",
                        "ROLLBACK_FAILED compfail-grandchild-saga Rollback of g0",
                        "ROLLBACK_FAILED compfail-child-saga Rollback of c0 (rolling back child scopes)",
                        "ROLLBACK_FAILED compfail-root-saga Rollback of r0 (rolling back child scopes)");
        assertThat(EventLog.rows(events)).as(log).noneMatch(r -> r.startsWith("ROLLED_BACK"));

        // the grandchild's failure: the compensation's exception, with the rollback cause among its causes
        Event grandchildFailed = find(events, e -> e.type() == EventType.ROLLBACK_FAILED
                && "compfail-grandchild-saga".equals(e.saga()));
        Failure g = Failure.fromJson(grandchildFailed.exception());
        assertThat(g.type()).isEqualTo("java.lang.IllegalStateException");
        assertThat(g.source()).startsWith("compfail-grandchild-saga[");
        assertThat(g.causes()).extracting(Failure::type).contains(ParentSaidSoException.TYPE);

        // the child combines both grandchild failures and its own rollback cause
        Event childFailed = find(events, e -> e.type() == EventType.ROLLBACK_FAILED
                && "compfail-child-saga".equals(e.saga()));
        Failure c = Failure.fromJson(childFailed.exception());
        assertThat(c.type()).isEqualTo(ChildRollbackFailedException.TYPE);
        assertThat(c.source()).startsWith("compfail-child-saga[");
        assertThat(c.causes()).extracting(Failure::message)
                .contains("cannot undo a", "cannot undo b");
        assertThat(c.causes()).extracting(Failure::type).contains(ParentSaidSoException.TYPE);

        // the root's failure carries the child's, which carries both grandchildren's
        Event rootFailed = find(events, e -> e.type() == EventType.ROLLBACK_FAILED
                && "compfail-root-saga".equals(e.saga()));
        Failure r = Failure.fromJson(rootFailed.exception());
        assertThat(r.type()).isEqualTo(ChildRollbackFailedException.TYPE);
        assertThat(r.causes()).extracting(Failure::type).contains(ChildRollbackFailedException.TYPE);
        String rendered = r.render();
        assertThat(rendered).contains("cannot undo a", "cannot undo b", "root fails", "[in compfail-root-saga[",
                "[in compfail-child-saga[", "[in compfail-grandchild-saga[");
    }

    @Test
    void a_child_whose_compensation_fails_after_its_own_step_failed_makes_the_hierarchy_end_rollback_failed(
            DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("selffail-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("selffail-child", Empty.class);
        Topic<Empty> grandchildTopic = Topic.of("selffail-grandchild", Empty.class);
        Saga<Empty> root = Saga.on(rootTopic, "selffail-root-saga")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "selffail-child-saga")
                .step("c0", step -> step.launch(grandchildTopic, new Empty()))
                .build();
        Saga<Empty> grandchild = Saga.on(grandchildTopic, "selffail-grandchild-saga")
                .step("g0", step -> {
                })
                .compensateWith((step, cause) -> {
                    throw new IllegalStateException("cannot undo g0");
                })
                .step("g1", step -> {
                    throw new RuntimeException("g1 fails");
                })
                .build();

        List<Event> events;
        Outcome outcome;
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child, grandchild).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            outcome = engine.client().awaitCompletion(id, WAIT);
            events = engine.client().events(id);
        }
        String log = EventLog.table(events);
        Event grandchildFailed = find(events, e -> e.type() == EventType.ROLLBACK_FAILED
                && "selffail-grandchild-saga".equals(e.saga()));
        assertThat(Failure.fromJson(grandchildFailed.exception()).causes()).extracting(Failure::message)
                .contains("g1 fails");
        // the child learns that its child failed to roll back
        Event childRollingBack = find(events, e -> e.type() == EventType.ROLLING_BACK
                && "selffail-child-saga".equals(e.saga()));
        assertThat(Failure.fromJson(childRollingBack.exception()).type()).as(log)
                .isEqualTo(ChildRollbackFailedException.TYPE);
        // a hierarchy in which a compensation failed did not roll back cleanly: the message's outcome must say so
        // (Outcome: "ROLLBACK_FAILED: at least one run's rollback failed" for the message's whole hierarchy)
        assertThat(outcome).as(log).isEqualTo(Outcome.ROLLBACK_FAILED);
    }

    @Test
    void each_compensation_commits_in_its_own_transaction(DataSource dataSource) throws SQLException {
        String table = createTable(dataSource, "comp_own_tx_writes");
        Topic<Empty> topic = Topic.of("comp-own-tx", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "comp-own-tx-saga")
                .step("s0", step -> insert(step.connection(), table, "s0 did"))
                .compensateWith((step, cause) -> {
                    insert(step.connection(), table, "s0 compensation tried");
                    throw new IllegalStateException("s0 cannot be undone");
                })
                .step("s1", step -> insert(step.connection(), table, "s1 did"))
                .compensateWith((step, cause) -> insert(step.connection(), table, "s1 undone"))
                .step("s2", step -> {
                    insert(step.connection(), table, "s2 did");
                    throw new IllegalStateException("s2 fails");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLBACK_FAILED);
            assertThat(EventLog.rows(engine.client().events(id))).containsExactly(
                    "EMITTED - -",
                    "SEEN comp-own-tx-saga -",
                    "SUSPENDED comp-own-tx-saga s0",
                    "SUSPENDED comp-own-tx-saga s1",
                    "ROLLING_BACK comp-own-tx-saga s2",
                    "SUSPENDED comp-own-tx-saga Rollback of s1 (rolling back child scopes)",
                    "SUSPENDED comp-own-tx-saga Rollback of s1",
                    "SUSPENDED comp-own-tx-saga Rollback of s0 (rolling back child scopes)",
                    "ROLLBACK_FAILED comp-own-tx-saga Rollback of s0");
        }
        assertThat(rows(dataSource, table)).containsExactly("s0 did", "s1 did", "s1 undone");
    }

    @Test
    void a_failing_compensation_runs_once_even_when_many_workers_compete(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("comp-once", Empty.class);
        Map<java.util.UUID, Integer> compensations = new ConcurrentHashMap<>();
        Saga<Empty> saga = Saga.on(topic, "comp-once-saga")
                .step("s0", step -> {
                })
                .compensateWith((step, cause) -> {
                    compensations.merge(step.runId(), 1, Integer::sum);
                    throw new IllegalStateException("cannot undo");
                })
                .step("s1", step -> {
                    throw new IllegalStateException("fails");
                })
                .build();
        int runs = 60;
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            List<MessageId> ids = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                ids.add(engine.client().launch(topic, new Empty()));
            }
            for (MessageId id : ids) {
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLBACK_FAILED);
            }
        }
        assertThat(compensations).hasSize(runs);
        assertThat(compensations.entrySet().stream().filter(e -> e.getValue() != 1).toList())
                .as("runs whose failing compensation ran more than once").isEmpty();
    }

    // --- helpers

    static String rootMessage(Failure f) {
        while (!f.causes().isEmpty()) {
            f = f.causes().getFirst();
        }
        return f.message();
    }

    static void assertBefore(List<String> order, String first, String second) {
        assertThat(order).as("%s before %s in %s", first, second, order).contains(first, second);
        assertThat(order.indexOf(first)).as("%s before %s in %s", first, second, order)
                .isLessThan(order.indexOf(second));
    }

    static Event find(List<Event> events, Predicate<Event> p) {
        return events.stream().filter(p).findFirst()
                .orElseThrow(() -> new AssertionError("no such event in\n" + EventLog.table(events)));
    }

    static int indexOf(List<Event> events, Predicate<Event> p) {
        for (int i = 0; i < events.size(); i++) {
            if (p.test(events.get(i))) {
                return i;
            }
        }
        throw new AssertionError("no such event in\n" + EventLog.table(events));
    }

    static String createTable(DataSource dataSource, String name) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS public." + name + " (what text NOT NULL)");
            s.execute("TRUNCATE public." + name);
        }
        return "public." + name;
    }

    static void insert(Connection c, String table, String what) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " (what) VALUES (?)")) {
            ps.setString(1, what);
            ps.executeUpdate();
        }
    }

    static List<String> rows(DataSource dataSource, String table) throws SQLException {
        List<String> rows = new ArrayList<>();
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT what FROM " + table + " ORDER BY what")) {
            while (rs.next()) {
                rows.add(rs.getString(1));
            }
        }
        return rows;
    }
}
