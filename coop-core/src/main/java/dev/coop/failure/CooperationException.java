package dev.coop.failure;

/**
 * A failure that crossed a saga boundary: a child's failure seen by its parent, the reason a compensation runs, or a
 * failure read back from the log. Its message is {@code [source] type: message}; its stack trace is the remote one,
 * and its causes are the remote causes (the first as {@link #getCause()}, the rest suppressed), so
 * {@link #printStackTrace()} prints a distributed stack trace. {@link Failure#render()} prints the whole tree.
 * Subclasses mark the failures Coop itself raises; failures of other types keep their type name in
 * {@link Failure#type()}.
 */
public class CooperationException extends CoopException {
    private static final long serialVersionUID = 1L;

    private final transient Failure failure;

    protected CooperationException(Failure failure) {
        super(failure.toString());
        this.failure = failure;
        StackTraceElement[] frames = failure.stackTrace().stream()
                .map(f -> new StackTraceElement(f.className() == null ? "" : f.className(),
                        f.functionName() == null ? "" : f.functionName(), f.fileName(),
                        f.lineNumber() == null ? -1 : f.lineNumber()))
                .toArray(StackTraceElement[]::new);
        setStackTrace(frames);
        for (int i = 0; i < failure.causes().size(); i++) {
            CooperationException cause = of(failure.causes().get(i));
            if (i == 0) {
                initCause(cause);
            } else {
                addSuppressed(cause);
            }
        }
    }

    /** The Java view of a stored failure, as the subclass for Coop's own failure types. */
    public static CooperationException of(Failure failure) {
        return switch (failure.type()) {
            case ChildRolledBackException.TYPE -> new ChildRolledBackException(failure);
            case ChildRollbackFailedException.TYPE -> new ChildRollbackFailedException(failure);
            case ParentSaidSoException.TYPE -> new ParentSaidSoException(failure);
            case GaveUpException.TYPE -> new GaveUpException(failure);
            case CancellationRequestedException.TYPE -> new CancellationRequestedException(failure);
            case RollbackRequestedException.TYPE -> new RollbackRequestedException(failure);
            case HappyPathDeadlineMissedException.TYPE -> new HappyPathDeadlineMissedException(failure);
            case RollbackPathDeadlineMissedException.TYPE -> new RollbackPathDeadlineMissedException(failure);
            case AbsoluteDeadlineMissedException.TYPE -> new AbsoluteDeadlineMissedException(failure);
            case DeadlineMissedException.TYPE -> new DeadlineMissedException(failure);
            default -> new CooperationException(failure);
        };
    }

    /** The language-agnostic failure behind this exception. */
    public Failure failure() {
        return failure;
    }

    /** The failure's own message, without the source and type prefix. */
    public String reason() {
        return failure.message();
    }
}
