package dev.coop.internal;

import dev.coop.CoopStoreException;
import dev.coop.CooperationException;
import dev.coop.Failure;
import dev.coop.GaveUpException;
import java.util.List;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;

/** Tells Coop's own infrastructure failures (retry later) from failures of user code (the step failed). */
public final class Failures {
    private Failures() {
    }

    /**
     * True when {@code t} says the database or the connection failed rather than the step's logic: lost
     * connections (SQLSTATE class 08), serialization failures and deadlocks (40), resource exhaustion (53),
     * operator intervention such as a restart (57P), or an {@link OutOfMemoryError}.
     */
    public static boolean isInfrastructure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof OutOfMemoryError || c instanceof CoopStoreException
                    || c instanceof SQLRecoverableException || c instanceof SQLTransientException) {
                return true;
            }
            if (c instanceof SQLException sql && isInfrastructureState(sql.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    /** The failure of a run that gives up because of the cancellation {@code cancellationJson}. */
    public static CooperationException gaveUp(String cancellationJson, String source) {
        Failure cancellation = Failure.fromJson(cancellationJson);
        return CooperationException.of(new Failure("Gave up: " + cancellation.message(), GaveUpException.TYPE, source,
                List.of(), List.of(cancellation)));
    }

    /** True when the statement failed because the run's scope was cancelled (see assert_not_cancelled). */
    public static boolean isCancelled(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof SQLException sql && Store.CANCELLED.equals(sql.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    static boolean isInfrastructureState(String state) {
        return state != null && (state.startsWith("08") || state.startsWith("40") || state.startsWith("53")
                || state.startsWith("57P"));
    }
}
