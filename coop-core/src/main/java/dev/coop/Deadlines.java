package dev.coop;

/**
 * The three deadlines a {@link CooperationContext} can carry. A run whose happy-path deadline passes gives up and
 * rolls back; a rollback whose rollback-path deadline passes gives up and ends ROLLBACK_FAILED; the absolute deadline
 * applies to both. They are checked when a step or compensation is about to start and, cooperatively, by
 * {@link StepContext#giveUpIfRequested()}.
 */
public final class Deadlines {
    /** The happy path (the steps) must be done by then. */
    public static final ContextKey<Deadline> HAPPY_PATH = new ContextKey<>("coop.deadline.happy-path", Deadline.class);
    /** A rollback (the compensations) must be done by then. */
    public static final ContextKey<Deadline> ROLLBACK_PATH = new ContextKey<>("coop.deadline.rollback-path",
            Deadline.class);
    /** Everything, steps and compensations, must be done by then. */
    public static final ContextKey<Deadline> ABSOLUTE = new ContextKey<>("coop.deadline.absolute", Deadline.class);

    private Deadlines() {
    }

    /**
     * The deadline that applies on a path: the earlier of the path's own (happy or rollback) and the absolute one.
     */
    public static java.util.Optional<Deadline> applying(CooperationContext context, boolean rollbackPath) {
        if (context.isEmpty()) {
            return java.util.Optional.empty();
        }
        Deadline path = context.get(rollbackPath ? ROLLBACK_PATH : HAPPY_PATH).orElse(null);
        Deadline absolute = context.get(ABSOLUTE).orElse(null);
        if (path == null) {
            return java.util.Optional.ofNullable(absolute);
        }
        return java.util.Optional.of(absolute == null || !absolute.at().isBefore(path.at()) ? path : absolute);
    }

    static boolean isDeadline(String key) {
        return key.equals(HAPPY_PATH.name()) || key.equals(ROLLBACK_PATH.name()) || key.equals(ABSOLUTE.name());
    }
}
