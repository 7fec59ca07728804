package dev.coop.internal.store;

/**
 * When a saga's runnable runs are due.
 *
 * @param firstMillis milliseconds until the earliest is due (zero or less: due now)
 * @param nextMillis milliseconds until the earliest due in the future, or null when none is
 */
public record Due(long firstMillis, Long nextMillis) {
    /** The earlier of two versions' due times. */
    Due earliest(Due other) {
        Long next = nextMillis == null
                ? other.nextMillis
                : other.nextMillis == null ? nextMillis : Long.valueOf(Math.min(nextMillis, other.nextMillis));
        return new Due(Math.min(firstMillis, other.firstMillis), next);
    }
}
