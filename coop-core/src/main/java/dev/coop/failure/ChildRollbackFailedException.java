package dev.coop.failure;

/** The rollback of a run caused by a step failed; the failures are the causes. */
public final class ChildRollbackFailedException extends CooperationException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.ChildRollbackFailedException";

    ChildRollbackFailedException(Failure failure) {
        super(failure);
    }
}
