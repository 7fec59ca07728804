package dev.coop.internal;

import dev.coop.ContextKey;
import dev.coop.CooperationContext;
import dev.coop.Deadline;
import dev.coop.Deadlines;
import java.util.List;

/** Which deadline of a context applies, and the failure of a run that missed it. */
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

    /** The earlier of the path's deadline (happy or rollback) and the absolute one; null when there is none. */
    static Deadline effective(CooperationContext context, boolean rollbackPath) {
        if (context.isEmpty()) {
            return null;
        }
        Deadline path = context.get(rollbackPath ? Deadlines.ROLLBACK_PATH : Deadlines.HAPPY_PATH).orElse(null);
        Deadline absolute = context.get(Deadlines.ABSOLUTE).orElse(null);
        if (path == null) {
            return absolute;
        }
        return absolute == null || !absolute.at().isBefore(path.at()) ? path : absolute;
    }
}
