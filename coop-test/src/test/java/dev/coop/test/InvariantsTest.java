package dev.coop.test;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.Lineage;
import dev.coop.MessageId;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class InvariantsTest {
    static final UUID ROOT_MESSAGE = UUID.fromString("00000000-0000-7000-8000-00000000b796");
    static final UUID ROOT_RUN = UUID.fromString("00000000-0000-7000-8000-000000005310");
    static final UUID CHILD_MESSAGE = UUID.fromString("00000000-0000-7000-8000-000000004501");
    static final UUID CHILD_RUN = UUID.fromString("00000000-0000-7000-8000-000000006817");
    static final List<UUID> ROOT = List.of(ROOT_MESSAGE, ROOT_RUN);
    static final List<UUID> CHILD = List.of(ROOT_MESSAGE, ROOT_RUN, CHILD_RUN);

    /** Builds a log, numbering events in the order they are added. */
    static final class LogBuilder {
        final List<Event> events = new ArrayList<>();

        LogBuilder add(EventType type, UUID message, String saga, String step, List<UUID> lineage) {
            events.add(new Event(events.size() + 1, new MessageId(message), type, saga, saga == null ? null : "e1",
                    step, new Lineage(lineage), OffsetDateTime.now(), null, null, null));
            return this;
        }
    }

    /** Seed 001's first table. */
    static LogBuilder seedTableUpTo(int rows) {
        LogBuilder log = new LogBuilder();
        Object[][] table = {
                {EventType.EMITTED, ROOT_MESSAGE, null, null, List.of(ROOT_MESSAGE)},
                {EventType.SEEN, ROOT_MESSAGE, "root-handler", null, ROOT},
                {EventType.EMITTED, CHILD_MESSAGE, "root-handler", "0", ROOT},
                {EventType.SUSPENDED, ROOT_MESSAGE, "root-handler", "0", ROOT},
                {EventType.SEEN, CHILD_MESSAGE, "child-handler", null, CHILD},
                {EventType.SUSPENDED, CHILD_MESSAGE, "child-handler", "0", CHILD},
                {EventType.SUSPENDED, CHILD_MESSAGE, "child-handler", "1", CHILD},
                {EventType.COMMITTED, CHILD_MESSAGE, "child-handler", "1", CHILD},
                {EventType.SUSPENDED, ROOT_MESSAGE, "root-handler", "1", ROOT},
                {EventType.COMMITTED, ROOT_MESSAGE, "root-handler", "1", ROOT}};
        for (int i = 0; i < rows; i++) {
            Object[] r = table[i];
            @SuppressWarnings("unchecked")
            List<UUID> lineage = (List<UUID>) r[4];
            log.add((EventType) r[0], (UUID) r[1], (String) r[2], (String) r[3], lineage);
        }
        return log;
    }

    @Test
    void the_seed_table_satisfies_every_invariant() {
        assertThatCode(() -> Invariants.assertAll(seedTableUpTo(10).events)).doesNotThrowAnyException();
    }

    @Test
    void a_log_of_a_hierarchy_still_running_satisfies_them_too() {
        for (int rows = 1; rows <= 10; rows++) {
            List<Event> events = seedTableUpTo(rows).events;
            assertThatCode(() -> Invariants.assertAll(events)).as("first %d rows", rows).doesNotThrowAnyException();
        }
    }

    @Test
    void a_parent_step_before_its_child_finished_breaks_the_barrier() {
        LogBuilder log = seedTableUpTo(6)
                .add(EventType.SUSPENDED, ROOT_MESSAGE, "root-handler", "1", ROOT)
                .add(EventType.SUSPENDED, CHILD_MESSAGE, "child-handler", "1", CHILD)
                .add(EventType.COMMITTED, CHILD_MESSAGE, "child-handler", "1", CHILD);
        assertThatThrownBy(() -> Invariants.assertStepBarrier(log.events)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("violation(s) of step barrier")
                .hasMessageContaining("wrote SUSPENDED root-handler 1 (#7) after step '0'")
                .hasMessageContaining("finished only at #9");
    }

    @Test
    void a_parent_committing_while_its_child_never_finished_breaks_the_barrier() {
        LogBuilder log = seedTableUpTo(6)
                .add(EventType.SUSPENDED, ROOT_MESSAGE, "root-handler", "1", ROOT)
                .add(EventType.COMMITTED, ROOT_MESSAGE, "root-handler", "1", ROOT);
        assertThatThrownBy(() -> Invariants.assertStepBarrier(log.events))
                .hasMessageContaining("never finished");
    }

    @Test
    void a_parent_failing_before_its_child_finished_breaks_the_barrier() {
        LogBuilder log = seedTableUpTo(6)
                .add(EventType.ROLLING_BACK, ROOT_MESSAGE, "root-handler", "0", ROOT)
                .add(EventType.COMMITTED, CHILD_MESSAGE, "child-handler", "1", CHILD);
        assertThatThrownBy(() -> Invariants.assertStepBarrier(log.events))
                .hasMessageContaining("wrote ROLLING_BACK root-handler 0");
    }

    @Test
    void a_child_starting_before_the_step_that_launched_it_committed_breaks_the_barrier() {
        LogBuilder log = seedTableUpTo(3)
                .add(EventType.SEEN, CHILD_MESSAGE, "child-handler", null, CHILD)
                .add(EventType.SUSPENDED, ROOT_MESSAGE, "root-handler", "0", ROOT);
        assertThatThrownBy(() -> Invariants.assertStepBarrier(log.events))
                .hasMessageContaining("before the step '0' that launched it committed");
    }

    @Test
    void a_run_without_seen_is_malformed() {
        LogBuilder noSeen = seedTableUpTo(4).add(EventType.SUSPENDED, CHILD_MESSAGE, "child-handler", "0", CHILD);
        assertThatThrownBy(() -> Invariants.assertRunsWellFormed(noSeen.events))
                .hasMessageContaining("starts with SUSPENDED child-handler 0")
                .hasMessageContaining("has 0 SEEN events");

        LogBuilder afterEnd = seedTableUpTo(10).add(EventType.SUSPENDED, ROOT_MESSAGE, "root-handler", "2", ROOT);
        assertThatThrownBy(() -> Invariants.assertRunsWellFormed(afterEnd.events))
                .hasMessageContaining("after COMMITTED");
    }

    @Test
    void a_run_of_a_message_never_emitted_or_emitted_elsewhere_is_malformed() {
        LogBuilder wrongScope = seedTableUpTo(4).add(EventType.SEEN, CHILD_MESSAGE, "child-handler", null,
                List.of(ROOT_MESSAGE, CHILD_RUN));
        assertThatThrownBy(() -> Invariants.assertRunsWellFormed(wrongScope.events))
                .hasMessageContaining("emitted in scope {b796,5310}");
    }

    @Test
    void compensation_after_a_commit_is_allowed() {
        LogBuilder log = seedTableUpTo(10)
                .add(EventType.ROLLING_BACK, ROOT_MESSAGE, "root-handler", "1", ROOT)
                .add(EventType.SUSPENDED, ROOT_MESSAGE, "root-handler", "Rollback of 1", ROOT)
                .add(EventType.ROLLED_BACK, ROOT_MESSAGE, "root-handler", "Rollback of 0", ROOT);
        assertThatCode(() -> Invariants.assertAll(log.events)).doesNotThrowAnyException();
    }
}
