package dev.coop.failure;

/** Coop's own bookkeeping in PostgreSQL failed (connection lost, database restarting, ...). */
public class CoopStoreException extends CoopException {
    private static final long serialVersionUID = 1L;

    public CoopStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
