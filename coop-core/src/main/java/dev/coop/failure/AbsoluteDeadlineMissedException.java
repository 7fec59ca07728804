package dev.coop.failure;

/**
 * The absolute deadline ({@link dev.coop.Deadlines#ABSOLUTE}) passed, on either path: a run gave up its steps, or
 * its rollback gave up.
 */
public final class AbsoluteDeadlineMissedException extends DeadlineMissedException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.AbsoluteDeadlineMissedException";

    AbsoluteDeadlineMissedException(Failure failure) {
        super(failure);
    }
}
