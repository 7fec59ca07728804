package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.CollapsedRuns;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;
import dev.coop.render.JsonRenderer;
import dev.coop.render.RenderOptions;
import dev.coop.render.TextRenderer;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Trees are read within bounds: a step that caused 20,000 runs has them counted per saga and status with only the
 * runs that did not commit listed, and a subtree read reads only its scope.
 */
class BoundedTreeTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Item(int n) {
    }

    /**
     * Gives the messages {@code parent}'s steps launched (on a topic no saga handled then) runs of saga {@code saga},
     * with the events a one-step run writes, by direct SQL (fast): the first {@code committed} committed, the rest
     * rolled back.
     */
    static void addRuns(DataSource ds, RunView parent, String saga, int committed) throws Exception {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement("""
                WITH kids AS (
                  SELECT e.message_id, coop.uuid_v7() AS run_id, e.lineage, row_number() OVER (ORDER BY e.id) AS n
                    FROM coop.event e WHERE e.type = 'EMITTED' AND e.lineage[1] = ? AND e.lineage = ?::uuid[]
                ), runs AS (
                  INSERT INTO coop.run (id, message_id, saga, lineage, parent_id, parent_seq, status, steps_done,
                                        step_index, created_at, started_at, finished_at, root_id)
                  SELECT run_id, message_id, ?, lineage || run_id, ?::uuid, 0,
                         CASE WHEN n > ? THEN 'ROLLED_BACK' ELSE 'COMMITTED' END, 1, 1,
                         clock_timestamp() + n * interval '1 microsecond', clock_timestamp(), clock_timestamp(),
                         lineage[1]
                    FROM kids
                )
                INSERT INTO coop.event (message_id, type, saga, engine, step, lineage, root_id)
                SELECT k.message_id, t.type, ?, 'sql', t.step, k.lineage || k.run_id, k.lineage[1]
                  FROM kids k CROSS JOIN (VALUES (1, 'SEEN', NULL), (2, 'SUSPENDED', 'one'), (3, 'COMMITTED', 'one'))
                       AS t(o, type, step)
                 ORDER BY k.n, t.o
                """)) {
            int i = 0;
            ps.setObject(++i, parent.lineage().root());
            ps.setArray(++i, c.createArrayOf("uuid", parent.lineage().ids().toArray()));
            ps.setString(++i, saga);
            ps.setObject(++i, parent.runId());
            ps.setInt(++i, committed);
            ps.setString(++i, saga);
            ps.execute();
        }
    }

    /** A saga whose one step launches {@code n} messages on {@code items}, which no saga handles yet. */
    static Saga<Item> fanOut(String name, Topic<Item> items, int n) {
        return Saga.on(Topic.of(name, Item.class), name).step("fan-out", step -> {
            for (int i = 0; i < n; i++) {
                step.launch(items, new Item(i));
            }
        }).step("after", step -> {
        }).build();
    }

    static RunView launched(Saga<Item> saga, MessageId[] id) {
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(saga).start()) {
            id[0] = engine.client().launch(saga.topic(), new Item(0));
            assertThat(engine.client().awaitCompletion(id[0], WAIT)).isEqualTo(Outcome.COMMITTED);
            return engine.client().tree(id[0]).runs().getFirst();
        }
    }

    @Test
    void a_fan_out_of_20000_runs_is_counted_with_the_runs_that_did_not_commit_listed() throws Exception {
        MessageId[] launched = new MessageId[1];
        RunView before = launched(fanOut("bounded-fan", Topic.of("bounded-item", Item.class), 20_005), launched);
        MessageId id = launched[0];
        addRuns(db.dataSource(), before, "bounded-item", 20_002);
        CoopClient client = CoopClient.builder(db.dataSource()).build();
        Hierarchy tree = client.tree(id);
        RunView root = tree.runs().getFirst();
        assertThat(root.collapsed()).containsExactly(new CollapsedRuns("bounded-item", 20_005,
                java.util.Map.of(RunStatus.COMMITTED, 20_002L, RunStatus.ROLLED_BACK, 3L)));
        assertThat(root.childCount()).isEqualTo(20_005);
        assertThat(root.children()).hasSize(3).allMatch(r -> r.status() == RunStatus.ROLLED_BACK)
                .allSatisfy(r -> assertThat(r.steps()).extracting(StepView::name).containsExactly("one"));
        StepView fanOut = root.steps().getFirst();
        assertThat(fanOut.name()).isEqualTo("fan-out");
        assertThat(fanOut.launched()).containsExactlyElementsOf(root.children().stream().map(RunView::messageId)
                .toList());
        assertThat(fanOut.launchedCount()).isEqualTo(20_005);
        assertThat(root.steps().get(1).launchedCount()).isZero();
        assertThat(tree.finished()).isTrue();

        String text = new TextRenderer(RenderOptions.ascii()).render(tree);
        assertThat(text).contains("20005 runs of bounded-item: 20002 committed, 3 rolled back")
                .contains("(counted, not listed: the runs that did not commit are shown)")
                .contains("launched 20005").doesNotContain("UNHANDLED");
        assertThat(text.lines().count()).isLessThan(40);
        JsonRenderer json = new JsonRenderer(false);
        assertThat(json.readHierarchy(json.render(tree))).isEqualTo(tree);
        assertThat(json.render(tree)).contains("\"collapsed\":[{\"saga\":\"bounded-item\",\"total\":20005,"
                + "\"byStatus\":{\"COMMITTED\":20002,\"ROLLED_BACK\":3}}]");

        // a subtree: only its scope, with its own steps
        RunView listed = root.children().getFirst();
        RunView subtree = client.tree(listed.lineage());
        assertThat(subtree).isEqualTo(listed);
    }

    @Test
    void listed_runs_of_a_collapsed_fan_out_are_capped_oldest_first_and_still_running_ones_are_not_finished()
            throws Exception {
        MessageId[] launched = new MessageId[1];
        RunView before = launched(fanOut("bounded-cap", Topic.of("bounded-cap-item", Item.class), 5_250), launched);
        MessageId id = launched[0];
        addRuns(db.dataSource(), before, "bounded-cap-item", 5_000);
        CoopClient client = CoopClient.builder(db.dataSource()).build();
        Hierarchy tree = client.tree(id);
        RunView root = tree.runs().getFirst();
        assertThat(root.children()).hasSize(dev.coop.internal.read.Inspection.LISTED_MAX);
        List<java.time.OffsetDateTime> created = root.children().stream().map(RunView::createdAt).toList();
        assertThat(created).isSorted();
        assertThat(new TextRenderer(RenderOptions.ascii()).render(tree))
                .contains("(counted, not listed: showing 100 of the 250 runs that did not commit)");
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("UPDATE coop.run SET status = 'PARKED' WHERE id = ?")) {
            ps.setObject(1, root.children().getLast().runId());
            ps.executeUpdate();
        }
        Hierarchy later = client.tree(id);
        assertThat(later.finished()).isFalse();
        assertThat(later.runs().getFirst().collapsed().getFirst().count(RunStatus.PARKED)).isEqualTo(1);
    }
}
