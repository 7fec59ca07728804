package dev.coop.failure;

/**
 * The happy-path deadline ({@link dev.coop.Deadlines#HAPPY_PATH}) passed: the run gave up its steps and
 * rolled back.
 */
public final class HappyPathDeadlineMissedException extends DeadlineMissedException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.HappyPathDeadlineMissedException";

    HappyPathDeadlineMissedException(Failure failure) {
        super(failure);
    }
}
