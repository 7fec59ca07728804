package dev.coop.failure;

/** The root of every exception Coop throws. Unchecked. */
public class CoopException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public CoopException(String message) {
        super(message);
    }

    public CoopException(String message, Throwable cause) {
        super(message, cause);
    }
}
