package dev.coop;

import dev.coop.failure.Failure;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Order;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class ResultsTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Quote(String supplier, int price) {
    }

    @Test
    void the_next_step_reads_the_results_of_several_children_of_the_same_saga_kept_apart(DataSource dataSource) {
        Topic<Order> rootTopic = Topic.of("results2-root", Order.class);
        Topic<Order> quoteTopic = Topic.of("results2-quote", Order.class);
        Map<String, Object> seen = new ConcurrentHashMap<>();
        List<MessageId> launched = new java.util.concurrent.CopyOnWriteArrayList<>();
        Saga<Order> root = Saga.on(rootTopic, "results2-root-handler")
                .step("ask", step -> {
                    launched.add(step.launch(quoteTopic, new Order("acme", 10)));
                    launched.add(step.launch(quoteTopic, new Order("globex", 20)));
                    launched.add(step.launch(quoteTopic, new Order("fails", 0)));
                })
                .onChildFailure((step, failure) -> {
                    // handled: go on with the quotes we got
                })
                .step("choose", step -> {
                    seen.put("acme", step.childResult(launched.get(0), Quote.class));
                    seen.put("globex", step.childResult(launched.get(1), "results2-quote-handler", Quote.class));
                    seen.put("all", step.childResults());
                    try {
                        step.childResult(launched.get(2), Quote.class);
                    } catch (RunResult.NoResultException e) {
                        seen.put("why", e.getMessage());
                        seen.put("failure", e.failure().orElseThrow());
                    }
                    step.setResult(new Quote("acme", 11));
                })
                .build();
        Saga<Order> quote = Saga.on(quoteTopic, "results2-quote-handler")
                .step("price", step -> {
                    if (step.payload().id().equals("fails")) {
                        throw new IllegalStateException("supplier unreachable");
                    }
                    step.setResult(new Quote(step.payload().id(), step.payload().amount() + 1));
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, quote).start()) {
            MessageId id = engine.client().launch(rootTopic, new Order("o", 1));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(seen.get("acme")).isEqualTo(new Quote("acme", 11));
            assertThat(seen.get("globex")).isEqualTo(new Quote("globex", 21));
            @SuppressWarnings("unchecked")
            List<RunResult> all = (List<RunResult>) seen.get("all");
            assertThat(all).hasSize(3);
            assertThat(all).extracting(RunResult::message).containsExactlyElementsOf(launched);
            assertThat(all).extracting(RunResult::status).containsExactly(RunStatus.COMMITTED, RunStatus.COMMITTED,
                    RunStatus.ROLLED_BACK);
            assertThat((String) seen.get("why")).contains("has no result: it rolled back")
                    .contains("supplier unreachable");
            assertThat(((Failure) seen.get("failure")).message()).isEqualTo("supplier unreachable");

            // clients read results too
            assertThat(engine.client().result(id, Quote.class)).isEqualTo(new Quote("acme", 11));
            assertThat(engine.client().results(launched.get(2)).getFirst().hasResult()).isFalse();
            assertThatThrownBy(() -> engine.client().result(launched.get(2), Quote.class))
                    .isInstanceOf(RunResult.NoResultException.class).hasMessageContaining("rolled back");
        }
    }

    @Test
    void a_run_that_sets_no_result_says_so(DataSource dataSource) {
        Topic<Order> topic = Topic.of("results-none", Order.class);
        Saga<Order> saga = Saga.on(topic, "results-none-handler").step("nothing", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Order("o", 1));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThatThrownBy(() -> engine.client().result(id, Quote.class))
                    .isInstanceOf(RunResult.NoResultException.class)
                    .hasMessageContaining("committed without setting a result");
        }
    }
}
