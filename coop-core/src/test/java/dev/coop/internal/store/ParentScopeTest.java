package dev.coop.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The scope a count-off binds for its parent's {@code commit_allowed} (schema version 30), from the child's lineage
 * (the parent's, then the child's own id) and {@code cancel_from}: never a scope the parent's own {@code cancel_from}
 * would not reach, never empty.
 */
class ParentScopeTest {
    private static final UUID ROOT = UUID.randomUUID();
    private static final UUID FIRST = UUID.randomUUID();
    private static final UUID PARENT = UUID.randomUUID();
    private static final UUID CHILD = UUID.randomUUID();
    private static final UUID[] LINEAGE = {ROOT, FIRST, PARENT, CHILD};

    @Test
    void a_child_reached_by_every_cancellation_names_its_parents_whole_lineage() {
        assertThat(AdvanceSql.parentScope(LINEAGE, null)).containsExactly(ROOT, FIRST, PARENT);
        assertThat(AdvanceSql.parentScope(LINEAGE, 1)).containsExactly(ROOT, FIRST, PARENT);
    }

    @Test
    void a_child_launched_on_the_happy_path_shares_its_parents_cancel_from() {
        assertThat(AdvanceSql.parentScope(LINEAGE, 2)).containsExactly(FIRST, PARENT);
        assertThat(AdvanceSql.parentScope(LINEAGE, 3)).containsExactly(PARENT);
    }

    /** Launched on the parent's rollback path: the parent cannot commit there, the whole lineage is the safe answer. */
    @Test
    void a_child_launched_by_a_rollback_names_its_parents_whole_lineage() {
        assertThat(AdvanceSql.parentScope(LINEAGE, 4)).containsExactly(ROOT, FIRST, PARENT);
    }

    @Test
    void a_root_runs_child_names_the_root_run() {
        UUID rootRun = UUID.randomUUID();
        assertThat(AdvanceSql.parentScope(new UUID[]{ROOT, rootRun, CHILD}, null)).containsExactly(ROOT, rootRun);
    }
}
