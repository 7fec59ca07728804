package dev.coop.failure;

/** Someone asked the scope to give up; the message is their reason. */
public final class CancellationRequestedException extends CooperationException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.CancellationRequestedException";

    CancellationRequestedException(Failure failure) {
        super(failure);
    }
}
