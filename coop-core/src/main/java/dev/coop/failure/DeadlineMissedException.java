package dev.coop.failure;

/** A deadline of the run's context passed: the run gave up (the happy path) or its rollback did. */
public final class DeadlineMissedException extends CooperationException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.DeadlineMissedException";

    DeadlineMissedException(Failure failure) {
        super(failure);
    }
}
