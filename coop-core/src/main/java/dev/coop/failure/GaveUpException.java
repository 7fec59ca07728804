package dev.coop.failure;

/** The run gave up: cancelled, or a deadline passed; the reason is the cause. */
public final class GaveUpException extends CooperationException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.GaveUpException";

    GaveUpException(Failure failure) {
        super(failure);
    }
}
