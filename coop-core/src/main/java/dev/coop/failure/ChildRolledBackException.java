package dev.coop.failure;

/** Runs caused by a step rolled back; their failures are the causes. */
public final class ChildRolledBackException extends CooperationException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.ChildRolledBackException";

    ChildRolledBackException(Failure failure) {
        super(failure);
    }
}
