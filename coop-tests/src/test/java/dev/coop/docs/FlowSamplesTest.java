package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.Flow;
import dev.coop.MessageId;
import dev.coop.PruneResult;
import dev.coop.Saga;
import dev.coop.StepContext;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.TestClock;
import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The guide's samples (docs/guide) of child-failure flows, timed steps and retention, run with a test clock. */
class FlowSamplesTest {
    /** A database per test: the samples reuse topic names, and a saga registered once stays registered. */
    @RegisterExtension
    final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Order(String id) {
    }

    record Provision(String user) {
    }

    record Remind(String orderId) {
    }

    static final Topic<Order> ORDER_PLACED = Topic.of("order-placed", Order.class);
    static final Topic<Provision> PROVISION = Topic.of("provision", Provision.class);
    static final Topic<Remind> REMIND = Topic.of("remind", Remind.class);

    static final ConcurrentLinkedQueue<String> done = new ConcurrentLinkedQueue<>();

    static void poll(Order order) {
        done.add("poll " + order.id());
    }

    static boolean ready(StepContext<Order> step) {
        return step.iteration() == 3;
    }

    @Test
    void a_child_failure_handler_chooses_where_the_run_goes(DataSource dataSource) {
        Provision request = new Provision("ada");
        Saga<Order> access = Saga.on(ORDER_PLACED, "access")
                // tag::child-failure-flow[]
                .step("provision", step -> step.launch(PROVISION, request))
                .onChildFailure((step, failure, handling, pending) -> {
                    if (handling < 3) {
                        step.launch(PROVISION, request); // awaited first; if it fails too, the handler runs again
                        return pending;
                    }
                    return Flow.goTo("manual-review"); // give up retrying, go on elsewhere
                })
                // end::child-failure-flow[]
                .step("confirm", step -> done.add("confirmed"))
                .step("manual-review", step -> done.add("manual review"))
                .build();
        Saga<Provision> failing = Saga.on(PROVISION, "provisioning").step("create-user", step -> {
            done.add("attempt");
            throw new IllegalStateException("Directory unavailable");
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(access, failing).start()) {
            done.clear();
            MessageId id = engine.client().launch(ORDER_PLACED, new Order("o-1"));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(done).containsExactly("attempt", "attempt", "attempt", "manual review");
        }
    }

    @Test
    void delayed_children_periodic_steps_and_repeats_after_a_delay(DataSource dataSource) {
        TestClock clock = new TestClock();
        Remind r = new Remind("o-2");
        Saga<Order> orders = Saga.on(ORDER_PLACED, "orders")
                // tag::time-steps[]
                .step("remind", step -> step.launch(REMIND, r, step.startedAt().plus(Duration.ofDays(2)))) // a delayed child
                .periodic("poll", Duration.ofMinutes(5), 12, step -> poll(step.payload())) // every 5 minutes, 12 times
                .flowStep("wait-ready", step -> ready(step) ? Flow.next() : Flow.repeatAfter(Duration.ofSeconds(30)))
                // end::time-steps[]
                .build();
        Saga<Remind> reminders = Saga.on(REMIND, "reminders").step("send", step -> done.add("reminded")).build();
        CoopTables tables = CoopTables.of(dataSource);
        try (CoopEngine engine = Coop.engine(dataSource).clock(clock).register(orders, reminders).start()) {
            done.clear();
            MessageId id = engine.client().launch(ORDER_PLACED, new Order("o-2"));
            Await.until("the reminder waits", WAIT, () -> tables.idleAt(clock.now()));
            clock.advance(Duration.ofDays(2));
            for (int i = 1; i < 12 + 3; i++) { // 11 more polls, then two more readiness checks
                Await.until("the run waits", WAIT, () -> tables.idleAt(clock.now()));
                clock.advance(Duration.ofMinutes(5));
            }
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(done).hasSize(13).first().isEqualTo("reminded");
        }
    }

    @Test
    void finished_hierarchies_are_deleted_after_the_retention_age(DataSource dataSource) {
        TestClock clock = new TestClock();
        Saga<Order> onboarding = Saga.on(ORDER_PLACED, "onboarding").step("welcome", step -> {
        }).build();
        // tag::retention[]
        CoopEngine engine = Coop.engine(dataSource).register(onboarding).retention(Duration.ofDays(30)).start();
        // end::retention[]
        engine.close();
        try (CoopEngine timed = Coop.engine(dataSource).clock(clock).register(onboarding).start()) {
            CoopClient client = timed.client();
            MessageId id = client.launch(ORDER_PLACED, new Order("o-3"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.prune(Duration.ofDays(30)).hierarchies()).isZero();
            clock.advance(Duration.ofDays(31));
            PruneResult pruned = client.prune(Duration.ofDays(30));
            assertThat(pruned.hierarchies()).isEqualTo(1);
        }
    }
}
