package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.CitusDatabase;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What an engine settles by itself on a Citus database: it never listens (a worker's notification does not reach
 * the coordinator's listeners, and {@code pg_notify} is off there), it polls every
 * {@link Coop#DEFAULT_CITUS_POLL_INTERVAL} unless told otherwise, and it reads the schema's layout even when it does
 * not migrate (a team that migrates itself still gets the distributed statements).
 */
class CitusEngineDefaultsTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    @Test
    void an_engine_polls_often_and_does_not_listen_unless_told_otherwise() {
        Saga<Empty> saga = Saga.on(Topic.of("citus-defaults", Empty.class), "citus-defaults").step("s", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(saga).start()) {
            assertThat(engine.listens()).isFalse();
            assertThat(engine.pollInterval()).isEqualTo(Coop.DEFAULT_CITUS_POLL_INTERVAL);
        }
        try (CoopEngine engine = Coop.engine(db.dataSource()).notifications(true).pollInterval(Duration.ofMillis(40))
                .register(saga).start()) {
            assertThat(engine.listens()).as("asked for, refused with a warning").isFalse();
            assertThat(engine.pollInterval()).isEqualTo(Duration.ofMillis(40));
        }
    }

    @Test
    void an_engine_that_does_not_migrate_runs_the_distributed_schema() throws Exception {
        Topic<Empty> topic = Topic.of("citus-no-migrate", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "citus-no-migrate").step("one", step -> {
        }).step("two", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).migrate(false).register(saga).start()) {
            CoopClient client = CoopClient.builder(db.dataSource()).migrate(false).build();
            MessageId id = client.launch(topic, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }
}
