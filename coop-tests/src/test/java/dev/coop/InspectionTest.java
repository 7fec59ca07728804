package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class InspectionTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void the_tree_shows_runs_steps_launches_and_children_in_order(DataSource dataSource) {
        Topic<Empty> root = Topic.of("tree-root", Empty.class);
        Topic<Empty> child = Topic.of("tree-child", Empty.class);
        Saga<Empty> parent = Saga.on(root, "tree-parent")
                .step("fan-out", step -> {
                    step.launch(child, new Empty());
                    step.launch(child, new Empty());
                })
                .step("finish", step -> {
                })
                .build();
        Saga<Empty> kid = Saga.on(child, "tree-kid").step("only", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(parent, kid).start()) {
            MessageId id = engine.client().launch(root, new Empty());
            engine.client().awaitCompletion(id, WAIT);
            Hierarchy tree = engine.client().tree(id);

            assertThat(tree.topic()).isEqualTo("tree-root");
            assertThat(tree.finished()).isTrue();
            RunView run = tree.runs().getFirst();
            assertThat(run.saga()).isEqualTo("tree-parent");
            assertThat(run.status()).isEqualTo(RunStatus.COMMITTED);
            assertThat(run.steps()).extracting(StepView::name).containsExactly("fan-out", "finish");
            StepView fanOut = run.steps().getFirst();
            assertThat(fanOut.launched()).hasSize(2);
            assertThat(fanOut.startedAt()).isNotNull().isBeforeOrEqualTo(fanOut.endedAt());
            assertThat(run.children()).hasSize(2).allSatisfy(c -> {
                assertThat(c.saga()).isEqualTo("tree-kid");
                assertThat(c.steps()).extracting(StepView::name).containsExactly("only");
                assertThat(fanOut.launched()).contains(c.messageId());
                assertThat(run.lineage().contains(c.lineage())).isTrue();
            });
            assertThat(engine.client().tree(run.children().getFirst().lineage()).saga()).isEqualTo("tree-kid");
        }
    }

    /**
     * The log has a {@code Rollback of <step>} transaction for every executed instance (as the reference tables have
     * it), also of step "ok", which declares no compensation: the tree, its text and its JSON list only the
     * compensation that was declared ("undo"), and "Compensations, in the order they ran" only that one.
     */
    @Test
    void a_rolled_back_tree_shows_the_failure_and_the_compensations_that_were_declared(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("tree-fail", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "tree-failing")
                .step("ok", step -> {
                })
                .step("undo", step -> {
                }).compensateWith((step, cause) -> {
                })
                .step("boom", step -> {
                    throw new IllegalStateException("boom");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            engine.client().awaitCompletion(id, WAIT);
            assertThat(engine.client().events(id)).extracting(dev.coop.inspect.Event::step)
                    .as("the log keeps the transaction").contains("Rollback of ok");
            dev.coop.inspect.Hierarchy tree = engine.client().tree(id);
            RunView run = tree.runs().getFirst();
            assertThat(run.status()).isEqualTo(RunStatus.ROLLED_BACK);
            assertThat(run.rollingBack()).isTrue();
            assertThat(run.failure().message()).isEqualTo("boom");
            assertThat(run.steps()).extracting(StepView::name, StepView::kind).containsExactly(
                    org.assertj.core.groups.Tuple.tuple("ok", StepView.Kind.STEP),
                    org.assertj.core.groups.Tuple.tuple("undo", StepView.Kind.STEP),
                    org.assertj.core.groups.Tuple.tuple("boom", StepView.Kind.STEP),
                    org.assertj.core.groups.Tuple.tuple("Rollback of undo (rolling back child scopes)",
                            StepView.Kind.ROLLBACK_CHILDREN),
                    org.assertj.core.groups.Tuple.tuple("Rollback of undo", StepView.Kind.COMPENSATION),
                    org.assertj.core.groups.Tuple.tuple("Rollback of ok (rolling back child scopes)",
                            StepView.Kind.ROLLBACK_CHILDREN));
            assertThat(run.steps().get(2).failure().type()).isEqualTo("java.lang.IllegalStateException");
            String text = new dev.coop.render.TextRenderer(dev.coop.render.RenderOptions.defaults()).render(tree);
            assertThat(text).contains("undo  compensation").doesNotContain("ok  compensation");
            assertThat(text.substring(text.indexOf("Compensations, in the order they ran")))
                    .contains("tree-failing: undo").doesNotContain("tree-failing: ok");
            String json = new dev.coop.render.JsonRenderer(false).render(tree);
            assertThat(json).contains("\"Rollback of undo\"").doesNotContain("\"Rollback of ok\"");
        }
    }

    @Test
    void runs_are_listed_newest_first_filtered_and_paged(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("listing", Empty.class);
        Saga<Empty> good = Saga.on(topic, "listing-good").step("s", step -> {
        }).build();
        Saga<Empty> bad = Saga.on(topic, "listing-bad").step("s", step -> {
            throw new IllegalStateException("no");
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(good, bad).start()) {
            for (int i = 0; i < 5; i++) {
                engine.client().awaitCompletion(engine.client().launch(topic, new Empty()), WAIT);
            }
            CoopClient client = engine.client();
            List<RunSummary> all = client.runs(RunQuery.newest().topic("listing"));
            assertThat(all).hasSize(10);
            assertThat(all).extracting(RunSummary::createdAt).isSortedAccordingTo((a, b) -> b.compareTo(a));
            assertThat(client.runs(RunQuery.newest().topic("listing").status(RunStatus.ROLLED_BACK)))
                    .hasSize(5).allSatisfy(r -> {
                        assertThat(r.saga()).isEqualTo("listing-bad");
                        assertThat(r.failureMessage()).isEqualTo("no");
                    });
            assertThat(client.runs(RunQuery.newest().saga("listing-good"))).hasSize(5);
            List<RunSummary> first = client.runs(RunQuery.newest().topic("listing").limit(4));
            List<RunSummary> second = client.runs(RunQuery.newest().topic("listing").limit(4)
                    .before(first.getLast().createdAt()));
            assertThat(first).hasSize(4);
            assertThat(second).hasSize(4).extracting(RunSummary::runId)
                    .doesNotContainAnyElementsOf(first.stream().map(RunSummary::runId).toList());
        }
    }

    @Test
    void unknown_ids_and_bad_limits_get_clear_errors(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        MessageId unknown = new MessageId(UUID.randomUUID());
        assertThatThrownBy(() -> client.tree(unknown)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("No message " + unknown);
        assertThatThrownBy(() -> client.tree(new Lineage(List.of(UUID.randomUUID()))))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("No run");
        assertThatThrownBy(() -> RunQuery.newest().limit(0)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("limit must be between 1 and 1000");
    }
}
