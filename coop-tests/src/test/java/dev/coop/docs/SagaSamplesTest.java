package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.ContextKey;
import dev.coop.CooperationContext;
import dev.coop.Flow;
import dev.coop.MessageId;
import dev.coop.RetryPolicy;
import dev.coop.RunResult;
import dev.coop.Saga;
import dev.coop.StepContext;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.io.IOException;
import java.sql.Connection;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The guide's samples (docs/guide) of failures, context, results, loops and finally parts, each run to completion. */
class SagaSamplesTest {
    /** A database per test: the samples reuse topic names, and a saga registered once stays registered. */
    @RegisterExtension
    final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Order(String id, long cents) {
    }

    record Ship(String orderId) {
    }

    record Provision(String user) {
    }

    record Tenant(String name) {
    }

    record QuoteRequest(String supplier) {
    }

    record Quote(String supplier, long cents) {
    }

    record Check(String orderId, int round) {
    }

    record Room(String roomId) {
    }

    static final Topic<Order> ORDER_PLACED = Topic.of("order-placed", Order.class);
    static final Topic<Ship> SHIP = Topic.of("ship", Ship.class);
    static final Topic<Provision> PROVISION = Topic.of("provision", Provision.class);
    static final Topic<QuoteRequest> QUOTE = Topic.of("quote", QuoteRequest.class);
    static final Topic<Check> CHECK_STATUS = Topic.of("check-status", Check.class);
    static final Topic<Room> BOOKING = Topic.of("booking", Room.class);

    /** What the sagas did, in order, for the assertions. */
    static final ConcurrentLinkedQueue<String> done = new ConcurrentLinkedQueue<>();

    static void charge(Order order) {
        done.add("charge " + order.id());
    }

    static void refund(Order order) {
        done.add("refund " + order.id());
    }

    static void callBank(Order order, int attempt) throws IOException {
        if (attempt == 1) {
            throw new IOException("the bank did not answer");
        }
        done.add("bank " + order.id() + " on attempt " + attempt);
    }

    static void undoCheck(int iteration) {
        done.add("undo check " + iteration);
    }

    static void reserve(StepContext<Room> step) {
        done.add("reserve " + step.payload().roomId());
    }

    static void cancelReservation(StepContext<Room> step) {
        done.add("cancel " + step.payload().roomId());
    }

    static void releaseLock(Connection connection, String roomId) {
        done.add("release " + roomId);
    }

    // tag::context-key[]
    static final ContextKey<Tenant> TENANT = ContextKey.of("tenant", Tenant.class);
    // end::context-key[]
    static final ContextKey<String> CHARGED_BY = ContextKey.of("charged-by", String.class);
    static final ContextKey<String> PRIORITY = ContextKey.of("priority", String.class);

    static final Saga<Ship> SHIPPING = Saga.on(SHIP, "shipping").step("ship", step -> {
        if (step.payload().orderId().startsWith("lost")) {
            throw new IllegalStateException("No address for order " + step.payload().orderId());
        }
        done.add("ship " + step.payload().orderId() + " " + step.context().get(PRIORITY).orElse("standard"));
    }).build();

    @Test
    void compensation_rolls_back_children_first(DataSource dataSource) {
        // tag::compensation[]
        Saga<Order> payment = Saga.on(ORDER_PLACED, "payment")
                .step("charge", step -> charge(step.payload()))
                .compensateWith((step, cause) -> refund(step.payload())) // cause: why the run rolls back
                .step("ship", step -> step.launch(SHIP, new Ship(step.payload().id())))
                .build();
        // end::compensation[]
        try (CoopEngine engine = Coop.engine(dataSource).register(payment, SHIPPING).start()) {
            done.clear();
            MessageId lost = engine.client().launch(ORDER_PLACED, new Order("lost-1", 100));
            assertThat(engine.client().awaitCompletion(lost, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(done).containsExactly("charge lost-1", "refund lost-1");
        }
    }

    @Test
    void a_child_failure_handler_launches_again(DataSource dataSource) {
        Provision request = new Provision("ada");
        Saga<Order> access = Saga.on(ORDER_PLACED, "access")
                // tag::child-failure[]
                .step("provision", step -> step.launch(PROVISION, request))
                .onChildFailure((step, failure) -> step.launch(PROVISION, request)) // try once more
                // end::child-failure[]
                .build();
        Saga<Provision> flaky = Saga.on(PROVISION, "flaky-provisioning").step("create-user", step -> {
            if (done.add("provision attempt") && done.stream().filter("provision attempt"::equals).count() == 1) {
                throw new IllegalStateException("Directory unavailable");
            }
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(access, flaky).start()) {
            done.clear();
            MessageId id = engine.client().launch(ORDER_PLACED, new Order("o-2", 100));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(done).containsExactly("provision attempt", "provision attempt");
        }
    }

    @Test
    void a_step_retries_its_own_failures(DataSource dataSource) {
        Saga<Order> bank = Saga.on(ORDER_PLACED, "bank")
                // tag::retry[]
                .step("call-bank", step -> callBank(step.payload(), step.attempt()))
                .retry(RetryPolicy.attempts(5).initialDelay(Duration.ofMillis(200)).multiplier(2)
                        .maxDelay(Duration.ofSeconds(30)).retryOn(IOException.class).parkWhenExhausted())
                // end::retry[]
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(bank).start()) {
            done.clear();
            MessageId id = engine.client().launch(ORDER_PLACED, new Order("o-3", 100));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(done).containsExactly("bank o-3 on attempt 2");
        }
    }

    @Test
    void a_saga_limits_its_steps_at_once_and_per_second_across_engines(DataSource dataSource) {
        Saga<Order> bank = Saga.on(ORDER_PLACED, "bank-api")
                // tag::limits[]
                .workers(2) // per engine: at most 2 of this engine's workers on this saga
                .concurrency(3) // across every engine: at most 3 runs in a step at once
                .rateLimit(10, Duration.ofSeconds(1)) // across every engine: at most 10 step starts a second
                .step("charge", step -> charge(step.payload()))
                // end::limits[]
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(bank).start()) {
            done.clear();
            List<MessageId> ids = new java.util.ArrayList<>();
            for (int i = 0; i < 12; i++) {
                ids.add(engine.client().launch(ORDER_PLACED, new Order("o-limit-" + i, 100)));
            }
            for (MessageId id : ids) {
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            assertThat(done).hasSize(12);
        }
    }

    @Test
    void context_flows_down_to_later_steps_and_children(DataSource dataSource) {
        Order order = new Order("o-4", 100);
        Ship ship = new Ship("o-4");
        Saga<Order> payment = Saga.on(ORDER_PLACED, "payment")
                // tag::context-step[]
                .step("charge", step -> {
                    Tenant tenant = step.context().get(TENANT).orElseThrow();
                    step.putContext(CHARGED_BY, "stripe"); // the next steps and later children see it
                    step.launch(SHIP, ship, CooperationContext.of(PRIORITY, "express")); // the child gets PRIORITY too
                })
                // end::context-step[]
                .step("confirm", step -> done.add("charged by " + step.context().get(CHARGED_BY).orElseThrow()
                        + " for " + step.context().get(TENANT).orElseThrow().name()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(payment, SHIPPING).start()) {
            CoopClient client = engine.client();
            done.clear();
            // tag::context-launch[]
            MessageId id = client.launch(ORDER_PLACED, order, CooperationContext.of(TENANT, new Tenant("acme")));
            // end::context-launch[]
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(done).containsExactly("ship o-4 express", "charged by stripe for acme");
        }
    }

    @Test
    void results_of_children_are_read_by_the_next_step(DataSource dataSource) {
        Saga<QuoteRequest> supplier = Saga.on(QUOTE, "supplier").step("quote", step -> {
            step.setResult(new Quote(step.payload().supplier(), step.payload().supplier().length() * 100L));
        }).build();
        Saga<Order> buying = Saga.on(ORDER_PLACED, "buying")
                // tag::results[]
                .step("ask", step -> {
                    step.launch(QUOTE, new QuoteRequest("acme"));
                    step.launch(QUOTE, new QuoteRequest("globex"));
                })
                .step("choose", step -> {
                    List<RunResult> all = step.childResults(); // status, result or failure, per run
                    Quote best = all.stream().filter(RunResult::hasResult).map(r -> r.get(Quote.class))
                            .min(Comparator.comparingLong(Quote::cents)).orElseThrow();
                    step.setResult(best); // what this run returns
                })
                // end::results[]
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(supplier, buying).start()) {
            CoopClient client = engine.client();
            MessageId messageId = client.launch(ORDER_PLACED, new Order("o-5", 100));
            assertThat(client.awaitCompletion(messageId, WAIT)).isEqualTo(Outcome.COMMITTED);
            // tag::results-client[]
            Quote chosen = client.result(messageId, Quote.class);
            // end::results-client[]
            assertThat(chosen).isEqualTo(new Quote("acme", 400));
        }
    }

    @Test
    void a_flow_step_repeats(DataSource dataSource) {
        Saga<Check> checker = Saga.on(CHECK_STATUS, "checker").step("check", step -> {
            done.add("check " + step.payload().round());
        }).build();
        Saga<Order> polling = Saga.on(ORDER_PLACED, "polling")
                // tag::loops[]
                .flowStep("poll", step -> {
                    step.launch(CHECK_STATUS, new Check(step.payload().id(), step.iteration()));
                    return step.iteration() < 3 ? Flow.repeat() : Flow.next();
                })
                .compensateWith((step, cause) -> undoCheck(step.iteration()))
                // end::loops[]
                .step("fail", step -> {
                    throw new IllegalStateException("Undo the checks");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(checker, polling).start()) {
            done.clear();
            MessageId id = engine.client().launch(ORDER_PLACED, new Order("o-6", 100));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(done).containsExactly("check 1", "check 2", "check 3", "undo check 3", "undo check 2",
                    "undo check 1");
        }
    }

    @Test
    void a_finally_part_runs_once(DataSource dataSource) {
        Saga<Room> booking = Saga.on(BOOKING, "booking")
                // tag::finally[]
                .step("reserve-room", step -> reserve(step))
                .compensateWith((step, cause) -> cancelReservation(step))
                .andFinally(step -> releaseLock(step.connection(), step.payload().roomId()))
                // end::finally[]
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(booking).start()) {
            done.clear();
            MessageId id = engine.client().launch(BOOKING, new Room("r-7"));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(done).containsExactly("reserve r-7", "release r-7");
        }
    }
}
