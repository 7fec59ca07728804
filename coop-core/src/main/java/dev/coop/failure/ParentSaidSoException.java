package dev.coop.failure;

/** This run rolls back because its parent rolls back; the parent's reason is the cause. */
public final class ParentSaidSoException extends CooperationException {
    private static final long serialVersionUID = 1L;
    /** The failure type stored in the log. */
    public static final String TYPE = "dev.coop.failure.ParentSaidSoException";

    ParentSaidSoException(Failure failure) {
        super(failure);
    }
}
