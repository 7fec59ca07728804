package dev.coop.internal.step;

import dev.coop.ContextKey;
import dev.coop.CooperationContext;
import dev.coop.Deadline;
import dev.coop.Deadlines;
import java.util.List;

/** The deadline entries of a context. */
final class DeadlineRules {
    private static final List<ContextKey<Deadline>> ALL = List.of(Deadlines.HAPPY_PATH, Deadlines.ROLLBACK_PATH,
            Deadlines.ABSOLUTE);

    private DeadlineRules() {
    }

    /** The deadline entries of {@code context} alone. */
    static CooperationContext only(CooperationContext context) {
        CooperationContext deadlines = CooperationContext.empty();
        for (ContextKey<Deadline> key : ALL) {
            String json = context.rawJson(key.name()).orElse(null);
            if (json != null) {
                deadlines = deadlines.withRawJson(key.name(), json);
            }
        }
        return deadlines;
    }
}
