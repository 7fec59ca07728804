package dev.coop;

import dev.coop.failure.ChildRolledBackException;
import dev.coop.failure.Failure;
import dev.coop.failure.ParentSaidSoException;
import dev.coop.inspect.Event;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The three rollback tables of seed 001 ("Rollbacks"), event for event. */
class SeedRollbackTablesTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    private static List<Event> runToEnd(DataSource dataSource, Topic<Empty> topic, Outcome expected,
            Saga<?>... sagas) {
        try (CoopEngine engine = Coop.engine(dataSource).register(sagas).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(expected);
            return engine.client().events(id);
        }
    }

    private static String type(Event e) {
        return e.exception() == null ? null : Failure.fromJson(e.exception()).type();
    }

    @Test
    void a_failing_step_never_publishes_what_it_launched(DataSource dataSource) {
        Topic<Empty> root = Topic.of("t1-root", Empty.class);
        Topic<Empty> child = Topic.of("t1-child", Empty.class);
        Saga<Empty> rootHandler = Saga.on(root, "t1-root-handler")
                .step("0", step -> {
                    step.launch(child, new Empty());
                    throw new RuntimeException("Geronimo!");
                })
                .build();
        Saga<Empty> childHandler = Saga.on(child, "t1-child-handler").step("0", step -> {
        }).build();

        List<Event> events = runToEnd(dataSource, root, Outcome.ROLLED_BACK, rootHandler, childHandler);

        assertThat(EventLog.rows(events)).containsExactly(
                "EMITTED - -",
                "SEEN t1-root-handler -",
                "ROLLING_BACK t1-root-handler 0",
                "ROLLED_BACK t1-root-handler Rollback of 0");
        Failure failure = Failure.fromJson(events.get(2).exception());
        assertThat(failure.type()).isEqualTo("java.lang.RuntimeException");
        assertThat(failure.message()).isEqualTo("Geronimo!");
        assertThat(failure.source()).startsWith("t1-root-handler[");
    }

    @Test
    void a_failing_compensation_ends_the_run_rollback_failed(DataSource dataSource) {
        Topic<Empty> root = Topic.of("t2-root", Empty.class);
        Topic<Empty> child = Topic.of("t2-child", Empty.class);
        Saga<Empty> rootHandler = Saga.on(root, "t2-root-handler")
                .step("0", step -> {
                })
                .compensateWith((step, cause) -> {
                    throw new IllegalArgumentException("Geronimo again!");
                })
                .step("1", step -> {
                    step.launch(child, new Empty());
                    throw new RuntimeException("Geronimo!");
                })
                .build();
        Saga<Empty> childHandler = Saga.on(child, "t2-child-handler").step("0", step -> {
        }).build();

        List<Event> events = runToEnd(dataSource, root, Outcome.ROLLBACK_FAILED, rootHandler, childHandler);

        assertThat(EventLog.rows(events)).containsExactly(
                "EMITTED - -",
                "SEEN t2-root-handler -",
                "SUSPENDED t2-root-handler 0",
                "ROLLING_BACK t2-root-handler 1",
                "SUSPENDED t2-root-handler Rollback of 0 (rolling back child scopes)",
                "ROLLBACK_FAILED t2-root-handler Rollback of 0");
        assertThat(type(events.get(3))).isEqualTo("java.lang.RuntimeException");
        Failure failed = Failure.fromJson(events.get(5).exception());
        assertThat(failed.type()).isEqualTo("java.lang.IllegalArgumentException");
        assertThat(failed.message()).isEqualTo("Geronimo again!");
        assertThat(failed.causes()).extracting(Failure::message).contains("Geronimo!");
    }

    @Test
    void a_failing_child_rolls_back_first_then_its_parent(DataSource dataSource) {
        Topic<Empty> root = Topic.of("t3-root", Empty.class);
        Topic<Empty> child = Topic.of("t3-child", Empty.class);
        Saga<Empty> rootHandler = Saga.on(root, "t3-root-handler")
                .step("0", step -> step.launch(child, new Empty()))
                .build();
        Saga<Empty> childHandler = Saga.on(child, "t3-child-handler")
                .step("0", step -> {
                })
                .step("1", step -> {
                    throw new RuntimeException("Geronimo!");
                })
                .build();

        List<Event> events = runToEnd(dataSource, root, Outcome.ROLLED_BACK, rootHandler, childHandler);

        assertThat(EventLog.rows(events)).containsExactly(
                "EMITTED - -",
                "SEEN t3-root-handler -",
                "EMITTED t3-root-handler 0",
                "SUSPENDED t3-root-handler 0",
                "SEEN t3-child-handler -",
                "SUSPENDED t3-child-handler 0",
                "ROLLING_BACK t3-child-handler 1",
                "SUSPENDED t3-child-handler Rollback of 0 (rolling back child scopes)",
                "SUSPENDED t3-child-handler Rollback of 0",
                "ROLLED_BACK t3-child-handler Rollback of 0",
                "ROLLING_BACK t3-root-handler 0",
                "ROLLBACK_EMITTED t3-root-handler Rollback of 0 (rolling back child scopes)",
                "SUSPENDED t3-root-handler Rollback of 0 (rolling back child scopes)",
                "SUSPENDED t3-root-handler Rollback of 0",
                "ROLLED_BACK t3-root-handler Rollback of 0");
        assertThat(type(events.get(6))).isEqualTo("java.lang.RuntimeException");
        Failure rootCause = Failure.fromJson(events.get(10).exception());
        assertThat(rootCause.type()).isEqualTo(ChildRolledBackException.TYPE);
        assertThat(rootCause.causes()).extracting(Failure::message).containsExactly("Geronimo!");
        Failure parentSaidSo = Failure.fromJson(events.get(11).exception());
        assertThat(parentSaidSo.type()).isEqualTo(ParentSaidSoException.TYPE);
        assertThat(parentSaidSo.causes().getFirst().type()).isEqualTo(ChildRolledBackException.TYPE);
        assertThat(parentSaidSo.causes().getFirst().causes().getFirst().message()).isEqualTo("Geronimo!");
        assertThat(events.get(11).messageId()).isEqualTo(events.get(2).messageId());
    }
}
