package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.OrderingKeyTest.Transfer;
import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.CitusDatabase;
import dev.coop.test.Invariants;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A saga's limits and ordering keys on a three-node Citus cluster: not run there yet, and refused with the reason
 * instead of waiting without end. A limited saga's claim ({@code ClaimSql.CLAIM} with its gate) locks the run in one
 * statement that reads every shard, which Citus refuses (the engine would retry it on every poll while the runs stay
 * runnable): an engine refuses to register it. An ordering key orders the runs of a saga across hierarchies, which
 * are on different shards, and the keyed launch ({@code EmitSql.EMIT_KEYED}) is refused by Citus: the launch is
 * refused, by a client (the exception) or by a step (its run rolls back with the reason). Docs/guide/citus.md.
 */
class CitusLimitsTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    @Test
    void an_engine_refuses_to_register_a_saga_with_a_concurrency_or_rate_limit_naming_it() {
        Topic<Empty> topic = Topic.of("citus-limited", Empty.class);
        Saga<Empty> concurrent = Saga.on(topic, "citus-limited-concurrency").concurrency(2).step("s", step -> {
        }).build();
        Saga<Empty> rated = Saga.on(topic, "citus-limited-rate").rateLimit(5, Duration.ofSeconds(1)).step("s",
                step -> {
                }).build();
        assertThatThrownBy(() -> CitusHappyPathTest.engine(db.dataSource()).register(concurrent).start().close())
                .hasMessageContaining("citus-limited-concurrency").hasMessageContaining("concurrency limit")
                .hasMessageContaining("Citus");
        assertThatThrownBy(() -> CitusHappyPathTest.engine(db.dataSource()).register(rated).start().close())
                .hasMessageContaining("citus-limited-rate").hasMessageContaining("rate limit")
                .hasMessageContaining("Citus");

        Saga<Empty> free = Saga.on(topic, "citus-unlimited").step("s", step -> {
        }).build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(free).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(engine.client().statuses(id)).containsExactly(RunStatus.COMMITTED);
        }
    }

    @Test
    void a_launch_with_an_ordering_key_is_refused_with_the_reason_by_a_client_and_in_a_step() {
        Topic<Transfer> topic = Topic.of("citus-okey", Transfer.class);
        Topic<Empty> parentTopic = Topic.of("citus-okey-parent", Empty.class);
        List<String> ran = new CopyOnWriteArrayList<>();
        Saga<Transfer> ledger = Saga.on(topic, "citus-okey-ledger").step("debit", step -> ran.add("debit"))
                .build();
        Saga<Empty> parent = Saga.on(parentTopic, "citus-okey-parent")
                .step("launch", step -> step.launch(topic, new Transfer("acct-1", 1),
                        LaunchOptions.none().orderingKey("acct-1")))
                .build();
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(ledger, parent).start()) {
            CoopClient client = engine.client();
            assertThatThrownBy(() -> client.launch(topic, new Transfer("acct-1", 1),
                    LaunchOptions.none().orderingKey("acct-1")))
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("Ordering keys are not supported on Citus");

            MessageId id = client.launch(parentTopic, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.events(id)).filteredOn(e -> e.type() == EventType.ROLLING_BACK).singleElement()
                    .satisfies(e -> assertThat(e.exception()).contains("Ordering keys are not supported on Citus"));
            Invariants.assertAll(client.events(id));

            MessageId plain = client.launch(topic, new Transfer("acct-1", 2)); // without a key it runs
            assertThat(client.awaitCompletion(plain, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ran).containsExactly("debit");
        }
    }
}
