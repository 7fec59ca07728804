package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.docs.GettingStarted;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Coop's core behaviours on a three-node Citus cluster ({@link CitusDatabase}): README's getting-started program, a
 * fan-out, a cascading rollback and a cancellation, with the hot tables distributed by the hierarchy's root
 * ({@code CitusLayout}). Engines run poll-only (docs/scaling.md, "Wake-ups on Citus"): a worker's notifications do
 * not reach listeners on the coordinator. What Citus still refuses is in docs/guide/citus.md.
 */
class CitusHappyPathTest {
    // tag::citus-database[]
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();
    // end::citus-database[]

    static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    static CoopEngine.Builder engine(DataSource dataSource) {
        return Coop.engine(dataSource).notifications(false).pollInterval(Duration.ofMillis(50));
    }

    @Test
    void the_getting_started_program_runs_on_the_cluster() throws Exception {
        PrintStream out = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            GettingStarted.main(new String[]{db.jdbcUrl(), "postgres", ""});
        } finally {
            System.setOut(out);
        }
        String text = printed.toString(StandardCharsets.UTF_8);
        out.print(text);
        assertThat(text).contains("Customer acc-1 is ready", "ada: COMMITTED, bob: ROLLED_BACK",
                "Account blocked-2 is blocked");
        assertThat(CitusLayoutTest.strings(db.dataSource(), "SELECT id FROM customer")).containsExactly("acc-1");
    }

    @Test
    void a_parent_fanning_out_to_five_children_continues_after_all_of_them_on_one_shard() throws SQLException {
        Topic<Empty> parentTopic = Topic.of("citus-fan-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-fan-child", Empty.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> parent = Saga.on(parentTopic, "citus-fan-parent")
                .step("fan-out", step -> {
                    for (int i = 0; i < 5; i++) {
                        step.launch(childTopic, new Empty());
                    }
                })
                .step("after", step -> ran.add("after"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-fan-child")
                .step("work", step -> ran.add("child"))
                .build();
        try (CoopEngine engine = engine(db.dataSource()).register(parent, child).start()) {
            MessageId id = engine.client().launch(parentTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ran).hasSize(6).endsWith("after");
            List<Event> events = engine.client().events(id);
            Invariants.assertAll(events);
            assertThat(events).filteredOn(e -> e.type() == EventType.COMMITTED).hasSize(6);
            assertThat(shardsOf(id.value())).as("every run, event and message of the hierarchy").hasSize(1);
        }
    }

    @Test
    void a_failing_grandchild_rolls_back_the_hierarchy_children_first() {
        Topic<Empty> rootTopic = Topic.of("citus-rb-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-rb-child", Empty.class);
        Topic<Empty> leafTopic = Topic.of("citus-rb-leaf", Empty.class);
        List<String> compensated = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "citus-rb-root")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> compensated.add("root"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-rb-child")
                .step("c0", step -> {
                })
                .compensateWith((step, cause) -> compensated.add("child c0"))
                .step("c1", step -> step.launch(leafTopic, new Empty()))
                .compensateWith((step, cause) -> compensated.add("child c1"))
                .build();
        Saga<Empty> leaf = Saga.on(leafTopic, "citus-rb-leaf")
                .step("fail", step -> {
                    throw new IllegalStateException("the leaf fails");
                })
                .build();
        try (CoopEngine engine = engine(db.dataSource()).register(root, child, leaf).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            List<Event> events = engine.client().events(id);
            assertThat(compensated).as(EventLog.table(events)).containsExactly("child c1", "child c0", "root");
            Invariants.assertAll(events);
        }
    }

    @Test
    void cancelling_a_hierarchy_whose_child_is_running_rolls_it_back() throws InterruptedException {
        Topic<Empty> rootTopic = Topic.of("citus-cancel-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("citus-cancel-child", Empty.class);
        StepGate gate = new StepGate();
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "citus-cancel-root")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .compensateWith((step, cause) -> ran.add("compensated root"))
                .step("r1", step -> ran.add("r1 (must not run)"))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "citus-cancel-child")
                .step("c0", step -> gate.pass())
                .step("c1", step -> ran.add("c1 (must not run)"))
                .build();
        try (CoopEngine engine = engine(db.dataSource()).register(root, child).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Empty());
            gate.awaitArrivals(1, WAIT);
            assertThat(client.cancel(id, "the customer changed their mind")).isEqualTo(CancelResult.REQUESTED);
            gate.open();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(ran).containsExactly("compensated root");
            Await.until("every run to finish", WAIT, () -> client.statuses(id).stream()
                    .allMatch(s -> s == RunStatus.ROLLED_BACK));
            Invariants.assertAll(client.events(id));
        }
    }

    /** The shards (of the co-located group) holding the hierarchy's runs, events and messages. */
    static List<Long> shardsOf(UUID root) throws SQLException {
        List<Long> shards = new ArrayList<>();
        try (Connection c = db.dataSource().getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT DISTINCT get_shard_id_for_distribution_column('coop.run', root_id) FROM (
                  SELECT root_id FROM coop.run WHERE root_id = ?
                  UNION ALL SELECT root_id FROM coop.event WHERE root_id = ?
                  UNION ALL SELECT root_id FROM coop.message WHERE root_id = ?) h""")) {
            for (int i = 1; i <= 3; i++) {
                ps.setObject(i, root);
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    shards.add(rs.getLong(1));
                }
            }
        }
        return shards;
    }
}
