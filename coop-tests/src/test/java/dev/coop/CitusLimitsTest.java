package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.CitusDatabase;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A saga's limits on a three-node Citus cluster: not run there yet, and refused with the reason instead of waiting
 * without end. A limited saga's claim ({@code ClaimSql.CLAIM} with its gate) locks the run in one statement that
 * reads every shard, which Citus refuses (the engine would retry it on every poll while the runs stay runnable): an
 * engine refuses to register it. Ordering keys run on Citus ({@code CitusKeysTest}). Docs/guide/citus.md.
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
}
