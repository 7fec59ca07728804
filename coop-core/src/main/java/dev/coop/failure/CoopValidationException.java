package dev.coop.failure;

/** Bad input: a name, payload, saga definition or setting that Coop refuses. The message names the problem. */
public class CoopValidationException extends CoopException {
    private static final long serialVersionUID = 1L;

    public CoopValidationException(String message) {
        super(message);
    }

    public CoopValidationException(String message, Throwable cause) {
        super(message, cause);
    }
}
