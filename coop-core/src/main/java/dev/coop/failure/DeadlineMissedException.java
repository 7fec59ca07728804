package dev.coop.failure;

/**
 * A deadline of the run's context passed: the run gave up (the happy path) or its rollback did. Each deadline has its
 * own subtype, and its own failure type in the log, so that code and other languages can tell them apart:
 * {@link HappyPathDeadlineMissedException}, {@link RollbackPathDeadlineMissedException} and
 * {@link AbsoluteDeadlineMissedException}. Catch this class for any of them. Documents written before the kinds
 * existed carry {@link #TYPE} and read back as this class.
 */
public sealed class DeadlineMissedException extends CooperationException
        permits HappyPathDeadlineMissedException, RollbackPathDeadlineMissedException,
        AbsoluteDeadlineMissedException {
    private static final long serialVersionUID = 1L;
    /** The failure type of documents that do not say which deadline passed (written by Coop before 14). */
    public static final String TYPE = "dev.coop.failure.DeadlineMissedException";

    DeadlineMissedException(Failure failure) {
        super(failure);
    }

    /** Whether {@code type} is the failure type of a missed deadline, of any kind. */
    public static boolean isDeadlineMissed(String type) {
        return TYPE.equals(type) || HappyPathDeadlineMissedException.TYPE.equals(type)
                || RollbackPathDeadlineMissedException.TYPE.equals(type)
                || AbsoluteDeadlineMissedException.TYPE.equals(type);
    }
}
