package dev.coop.internal.store;

/** How the log names the transactions that are not plain steps. Step names may not imitate them. */
public final class LogNames {
    /** Rollback sub-steps start with this. */
    public static final String ROLLBACK_PREFIX = "Rollback of ";
    /** The rollback sub-step that asks the runs an instance caused to roll back ends with this. */
    public static final String CHILDREN_SUFFIX = " (rolling back child scopes)";
    /** A child-failure handler run is logged as the step's name with this suffix. */
    public static final String HANDLER_SUFFIX = " (child failure handler)";
    /** The step that runs a step's finally part on the happy path is named after the step with this suffix. */
    public static final String FINALLY_SUFFIX = " (finally)";

    private LogNames() {
    }
}
