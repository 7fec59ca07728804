package dev.coop.failure;

/** Someone asked a finished scope to roll back (undo); the message is their reason. */
public final class RollbackRequestedException extends CooperationException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.RollbackRequestedException";

    RollbackRequestedException(Failure failure) {
        super(failure);
    }
}
