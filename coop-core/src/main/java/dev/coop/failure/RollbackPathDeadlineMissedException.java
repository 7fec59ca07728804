package dev.coop.failure;

/**
 * The rollback-path deadline ({@link dev.coop.Deadlines#ROLLBACK_PATH}) passed: the rollback gave up and the run
 * ended ROLLBACK_FAILED.
 */
public final class RollbackPathDeadlineMissedException extends DeadlineMissedException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.RollbackPathDeadlineMissedException";

    RollbackPathDeadlineMissedException(Failure failure) {
        super(failure);
    }
}
