package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import org.junit.jupiter.api.Test;

/**
 * The names the log gives transactions that are not plain steps (docs/protocol.md, "Step names in the log"): each
 * marks the step's own name, which a reader gets back exactly, because step names cannot imitate the marks.
 */
class LogNamesTest {
    private static Event named(String step) {
        return new Event(1, null, EventType.SUSPENDED, "s", null, step, null, null, null, null, null);
    }

    @Test
    void every_logged_name_reads_back_as_the_step_it_belongs_to() {
        assertThat(named("charge").sagaStep()).isEqualTo("charge");
        assertThat(named("charge (child failure handler)").sagaStep()).isEqualTo("charge");
        assertThat(named("charge (finally)").sagaStep()).isEqualTo("charge");
        assertThat(named("Rollback of charge").sagaStep()).isEqualTo("charge");
        assertThat(named("Rollback of charge (rolling back child scopes)").sagaStep()).isEqualTo("charge");
        assertThat(named("Rollback of charge (child failure handler)").sagaStep()).isEqualTo("charge");
        assertThat(named("Rollback of charge (child failure handler) (rolling back child scopes)").sagaStep())
                .isEqualTo("charge");
        assertThat(named("Rollback of charge (finally) (rolling back child scopes)").sagaStep()).isEqualTo("charge");
        assertThat(named("0 (child failure handler)").sagaStep()).isEqualTo("0");
        assertThat(named(null).sagaStep()).isNull();
    }

    @Test
    void step_names_that_imitate_a_mark_are_refused_with_the_name() {
        Topic<Empty> topic = Topic.of("log-names", Empty.class);
        for (String name : new String[]{"Rollback of x", "x (child failure handler)", "x (finally)",
                "x (rolling back child scopes)"}) {
            assertThatThrownBy(() -> Saga.on(topic, "log-names-saga").step(name, step -> {
            })).as(name).isInstanceOf(CoopValidationException.class).hasMessageContaining("'" + name + "'");
        }
    }
}
