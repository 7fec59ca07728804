package dev.coop.failure;

/** A wait ended before what it waited for happened. */
public class CoopTimeoutException extends CoopException {
    private static final long serialVersionUID = 1L;

    public CoopTimeoutException(String message) {
        super(message);
    }
}
